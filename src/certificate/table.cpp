#include "certificate/table.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace kvlayout::certificate {

namespace {
char letter(prove::Grade grade) {
  switch (grade) {
    case prove::Grade::ExactByte: return 'B';
    case prove::Grade::ExactToken: return 'T';
    case prove::Grade::Subset: return 'S';
    case prove::Grade::NotExact: return 'N';
    case prove::Grade::Refused: return 'R';
    case prove::Grade::Unknown: return 'U';
  }
  return '?';
}
}  // namespace

char cell(const Row& row) {
  if (!row.agree()) return '!';
  const char c = letter(row.grade);
  return row.not_cross_checked() ? static_cast<char>(c - 'A' + 'a') : c;
}

namespace {
void add(Counts& c, const Row& r) {
  ++c.rows;
  ++c.grades[prove::grade_name(r.grade)];
  ++c.reasons[prove::info(r.reason).code];
}
}  // namespace

Counts count_rows(const Matrix& m) {
  Counts c;
  for (const auto& r : m.rows) add(c, r);
  return c;
}

Counts count_classes(const Matrix& m) {
  std::set<std::string> representatives;
  for (const auto& cls : m.classes) representatives.insert(cls.front());
  Counts c;
  for (const auto& r : m.rows)
    if (representatives.count(r.source) && representatives.count(r.target)) add(c, r);
  return c;
}

std::string format_table(const Matrix& m) {
  std::ostringstream out;
  const std::size_t n = m.layouts.size();
  std::size_t width = 0;
  for (const auto& l : m.layouts) width = std::max(width, l->name.size());
  // Column header: the target's number, written vertically in two digits.
  for (int digit = 0; digit < 2; ++digit) {
    out << std::string(width + 6, ' ');
    for (std::size_t t = 0; t < n; ++t) {
      std::size_t k = t + 1;
      out << (digit == 0 ? (k >= 10 ? static_cast<char>('0' + k / 10) : ' ') : static_cast<char>('0' + k % 10)) << ' ';
    }
    out << "\n";
  }
  for (std::size_t s = 0; s < n; ++s) {
    char head[64];
    std::snprintf(head, sizeof head, "%3zu ", s + 1);
    out << head << m.layouts[s]->name << std::string(width - m.layouts[s]->name.size() + 2, ' ');
    for (std::size_t t = 0; t < n; ++t) out << cell(m.at(s, t)) << ' ';
    out << "\n";
  }
  out << "rows: source layout; columns: target layout (numbered as the rows). B EXACT_BYTE, T EXACT_TOKEN, "
         "S SUBSET, N NOT_EXACT, R REFUSED, U UNKNOWN, lower case: proven but not cross-checked, ! disagreement "
         "or internal error\n";
  return out.str();
}

std::string format_counts(const Matrix& m) {
  std::ostringstream out;
  Counts rows = count_rows(m), classes = count_classes(m);
  const char* order[] = {"EXACT_BYTE", "EXACT_TOKEN", "SUBSET", "NOT_EXACT", "REFUSED", "UNKNOWN"};
  out << "grades over " << rows.rows << " declared rows (" << m.layouts.size() << " layouts) and over "
      << classes.rows << " rows between " << m.classes.size() << " distinct classes:\n";
  for (const char* g : order) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-12s %5zu  %5zu\n", g, rows.grades[g], classes.grades[g]);
    out << line;
  }
  out << "reasons over declared rows:\n";
  for (const auto& [code, k] : rows.reasons) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-18s %5zu\n", code.c_str(), k);
    out << line;
  }
  std::size_t merged = m.layouts.size() - m.classes.size();
  if (merged) {
    out << "equivalence classes with more than one declaration:\n";
    for (const auto& c : m.classes) {
      if (c.size() < 2) continue;
      out << "  ";
      for (std::size_t i = 0; i < c.size(); ++i) out << (i ? " = " : "") << c[i];
      out << "\n";
    }
  }
  std::size_t checked = 0;
  std::string shapes;
  for (const auto& [shape, k] : m.cross_checked_on()) {
    checked += k;
    shapes += (shapes.empty() ? "" : ", ") + std::to_string(k) + " on " + shape;
  }
  const std::size_t disagree = m.disagreements() - m.errors();  // an internal error is no agreement either
  out << "cross-check: " << checked << " rows cross-checked by enumeration (" << (shapes.empty() ? "none" : shapes)
      << "), " << m.not_cross_checked() << " not cross-checked; " << checked - disagree << " rows agree, " << disagree
      << " DISAGREE; " << m.unknowns() << " UNKNOWN; " << m.errors() << " internal errors\n";
  return out.str();
}

}  // namespace kvlayout::certificate

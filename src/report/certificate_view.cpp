#include "report/certificate_view.hpp"

#include <algorithm>
#include <set>

#include "spec/error.hpp"

namespace kvlayout::report {

CertificateView read_certificate(const std::string& file) { return view_certificate(spec::read_json_file(file), file); }

CertificateView view_certificate(spec::Json document, const std::string& file) {
  CertificateView view;
  view.file = file;
  view.document = std::move(document);
  const spec::JsonNode root(view.document, file, "");
  root.expect_object();
  // Phase 1: the rows.
  for (const spec::JsonNode& r : root.at("rows", "the certificate's rows (kvlayout matrix --certificate)").items("an array of rows")) {
    RowView row;
    row.source = r.at("source", "the row's source layout").name("a layout name");
    row.target = r.at("target", "the row's target layout").name("a layout name");
    row.cache = r.at("cache", "the cache shape the row was proven on").name("a cache name");
    const std::string grade = r.at("grade", "the row's grade").string("a grade");
    auto parsed = prove::parse_grade(grade);
    if (!parsed) r.at("grade", "").fail("\"" + grade + "\"", "EXACT_BYTE, EXACT_TOKEN, SUBSET, NOT_EXACT, REFUSED or UNKNOWN");
    row.grade = *parsed;
    row.reason = r.at("reason", "the row's reason code").string("a reason code");
    if (auto u = r.find("unblocked_by"); u && !u->value().is_null()) row.capability = u->string("a capability or null");
    if (auto ms = r.find("prove_ms"); ms && ms->value().is_number()) row.prove_ms = ms->value().get<double>();
    if (auto p = r.find("positions_checked"); p && p->value().is_number_integer()) row.positions_checked = p->integer("a count");
    if (auto g = r.find("group"); g && g->value().is_boolean()) row.group = g->boolean("true or false");
    static const spec::Json absent;  // null
    row.counterexample = r.value().contains("counterexample") ? &r.value().at("counterexample") : &absent;
    row.cross_check = r.value().contains("cross_check") ? &r.value().at("cross_check") : &absent;
    view.rows.push_back(row);
  }
  // Phase 2: the equivalence classes (a layout missing from them is a class of its own).
  std::set<std::string> classed;
  if (auto classes = root.find("equivalence_classes")) {
    for (const spec::JsonNode& c : classes->items("an array of classes")) {
      std::vector<std::string> members;
      for (const spec::JsonNode& m : c.items("an array of layout names")) {
        std::string name = m.name("a layout name");
        if (!classed.insert(name).second) m.fail("\"" + name + "\" in two classes", "each layout in one class");
        members.push_back(name);
      }
      if (members.empty()) c.fail("an empty class", "at least one layout");
      std::sort(members.begin(), members.end());
      view.classes.push_back(members);
    }
  }
  for (const auto& row : view.rows)
    for (const std::string* name : {&row.source, &row.target})
      if (classed.insert(*name).second) view.classes.push_back({*name});
  return view;
}

}  // namespace kvlayout::report

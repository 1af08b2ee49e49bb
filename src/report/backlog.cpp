#include "report/backlog.hpp"

#include <algorithm>

#include "report/certificate_view.hpp"

namespace kvlayout::report {

std::string capability_head(const std::string& capability) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < capability.size(); ++i) {
    if (capability[i] == '(') ++depth;
    else if (capability[i] == ')') --depth;
    else if (depth == 0 && capability[i] == ':' && capability[i + 1] == ' ') return capability.substr(0, i);
  }
  return capability;
}

std::vector<BacklogItem> capability_backlog(const std::vector<BacklogRow>& rows) {
  std::map<std::string, BacklogItem> by_capability;
  for (const auto& r : rows) {
    if (prove::is_exact(r.grade)) continue;
    const std::string head = capability_head(r.capability);
    BacklogItem& item = by_capability[head];
    item.capability = head;
    item.rows.push_back(r);
    ++item.grades[prove::grade_name(r.grade)];
  }
  std::vector<BacklogItem> out;
  for (auto& [capability, item] : by_capability) out.push_back(std::move(item));
  std::stable_sort(out.begin(), out.end(), [](const BacklogItem& a, const BacklogItem& b) { return a.rows.size() > b.rows.size(); });
  return out;
}

std::string format_backlog(const std::vector<BacklogItem>& items) {
  std::size_t total = 0;
  for (const auto& i : items) total += i.rows.size();
  std::string out = "Capability backlog: " + std::to_string(total) + " non-exact rows, by what would unblock them\n";
  for (const auto& i : items) {
    std::string grades;
    for (const auto& [grade, n] : i.grades) grades += (grades.empty() ? "" : ", ") + grade + " " + std::to_string(n);
    std::string count = std::to_string(i.rows.size());
    out += "  " + std::string(count.size() < 4 ? 4 - count.size() : 0, ' ') + count + " pairs (" + grades + "): " +
           (i.capability.empty() ? "(no capability named: the move cannot be made exact)" : i.capability) + "\n";
  }
  return out;
}

}  // namespace kvlayout::report

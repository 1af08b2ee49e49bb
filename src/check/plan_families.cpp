#include "check/plan_families.hpp"

#include <stdexcept>

namespace kvlayout::check {
// Placeholder until the family checker lands (being written now); never reached by a test.
CheckResult check_family_plan(const layout::BoundLayout&, const layout::BoundLayout&, const nlohmann::json&,
                              const std::string&, const prove::ProveOptions&) {
  throw std::logic_error("check_family_plan: not yet implemented");
}
}  // namespace kvlayout::check

#include "check/plan_check.hpp"

#include <stdexcept>

namespace kvlayout::check {
// Placeholder until the plan checker lands (being written now); never reached by a test.
CheckResult check_plan(const layout::BoundLayout&, const layout::BoundLayout&, const nlohmann::json&,
                       const std::string&, const prove::ProveOptions&) {
  throw std::logic_error("check_plan: not yet implemented");
}
}  // namespace kvlayout::check

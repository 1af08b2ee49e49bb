#include "check/plan_check.hpp"

#include <chrono>

#include "check/plan_descriptors.hpp"
#include "check/plan_families.hpp"
#include "check/plan_slots.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {

CheckResult check_plan(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                       const std::string& file, const prove::ProveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (!plan.is_object()) throw spec::SpecError(file, "", plan.is_null() ? "null" : plan.type_name(), "a plan object with a \"form\"");
  auto form = plan.find("form");
  if (form == plan.end() || !form->is_string())
    throw spec::SpecError(file, "/form", form == plan.end() ? "no form" : form->dump(), "\"descriptors\", \"families\" or \"slots\"");
  const std::string f = form->get<std::string>();
  CheckResult r;
  if (f == "descriptors") r = check_descriptor_plan(source, target, plan, file, options);
  else if (f == "slots") r = check_slot_plan(source, target, plan, file, options);
  else if (f == "families") r = check_family_plan(source, target, plan, file, options);
  else throw spec::SpecError(file, "/form", "\"" + f + "\"", "\"descriptors\", \"families\" or \"slots\"");
  if (!r.checked_descriptors) r.checked_descriptors = 0;
  if (!r.checked_bytes) r.checked_bytes = 0;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace kvlayout::check

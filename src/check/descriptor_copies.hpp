#pragma once
// The copies of a descriptors plan, one per pair (or transfer), in plan order: their addresses and lengths
// (paired lengths must agree), their names for messages, and the rescan that finds the copy behind a
// counterexample byte. Internal to plan_descriptors.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/plan_explain.hpp"
#include "check/plan_json.hpp"
#include "check/plan_storage.hpp"
#include "check/result.hpp"

namespace kvlayout::check::descriptor_copies {

// One copy of the plan: source and target descriptors (or a transfer), named for messages.
struct Copy {
  std::int64_t src = 0, dst = 0, len = 0;
  std::string name;  // "/pairs/3: /source_descriptors/0 -> /target_descriptors/4"
};

std::int64_t copy_count(const DescriptorPlan& p);

// @pre 0 <= k < copy_count(p). Paired lengths must agree (NIXL refuses such a pair when it is prepared):
// otherwise a SpecError naming the pair.
Copy copy_at(const DescriptorPlan& p, std::int64_t k, const std::string& file, bool with_name);

// OUT_OF_BOUNDS for copy c, whose side's descriptor did not relocate (r).
CheckResult out_of_bounds(const Copy& c, bool on_source, const Relocated& r, const layout::BoundLayout& b);

// The copy writing target line byte `dst` from source line byte `src` (a rescan; counterexamples only).
Copy find_copy(const DescriptorPlan& p, const std::vector<Region>& sr, const std::vector<Region>& tr, const PlanSetting& s,
               std::int64_t dst, std::int64_t src, const std::string& file);

nlohmann::json copy_json(const Copy& c);

}  // namespace kvlayout::check::descriptor_copies

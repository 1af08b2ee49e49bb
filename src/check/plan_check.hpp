#pragma once
// `kvlayout plan check`: is a transfer plan a user wrote (descriptor lists, strided runs, symbolic
// families, slot maps) the right move from SOURCE's tensors to TARGET's? The plan JSON schema is in
// specs/plans.md. Concrete plans are decided by run arithmetic (intervals of contiguous bytes), symbolic
// families by the solver (check/plan_families.hpp).
#include <string>

#include <nlohmann/json.hpp>

#include "check/result.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

// @pre both sides fit their cache shape. `file` names the plan in errors (SpecError with JSON paths).
CheckResult check_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                       const nlohmann::json& plan, const std::string& file, const prove::ProveOptions& options = {});

}  // namespace kvlayout::check

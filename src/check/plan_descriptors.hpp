#pragma once
// The concrete `descriptors` form (descriptor lists or strided runs with pairs, or {src, dst, len}
// transfers): relocated through the registered regions to the two storage lines, compared with the
// expected move by run arithmetic. Precedence of verdicts (the first that applies is reported):
// VALUE_CHANGE, OUT_OF_BOUNDS, ALIASED, WRONG_MAPPING, FRAME_VIOLATION, UNCOVERED.
#include <string>

#include <nlohmann/json.hpp>

#include "check/plan_explain.hpp"
#include "check/result.hpp"

namespace kvlayout::check {

// @pre plan["form"] == "descriptors"; both sides fit.
CheckResult check_descriptor_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                  const nlohmann::json& plan, const std::string& file, const prove::ProveOptions& options);

// Shared with the slots form: VALUE_CHANGE when the element types or scales differ (a counterexample at the
// first position both hold), else nullopt. Throws SpecError when the contents differ.
std::optional<CheckResult> value_change(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                        const std::string& file);

}  // namespace kvlayout::check

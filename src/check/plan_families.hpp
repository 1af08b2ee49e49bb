#pragma once
// The symbolic plan form: descriptor families over named index variables with ranges, offsets and lengths
// as expressions in the layout language, block tables as functions. Proven for every value of the
// variables and every block table, at production size (the solver; nothing enumerates the members).
#include <string>

#include <nlohmann/json.hpp>

#include "check/result.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

// @pre plan["form"] == "families"; both sides fit. Called by check_plan.
CheckResult check_family_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                              const nlohmann::json& plan, const std::string& file, const prove::ProveOptions& options);

}  // namespace kvlayout::check

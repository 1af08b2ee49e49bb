#pragma once
// The top level of a plan JSON, shared by its three forms. The contract says "add members freely":
// outside checks attach their own members (a "schema", a "generator") to a plan, so an unknown member at
// the top level is ignored with one warning line on stderr, never refused. Inside entries (a region, a
// descriptor, a family) members stay strict: a typo there would silently fall back to a default.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvlayout::check {

// Writes "kvlayout: warning: FILE: /NAME: ignoring an unknown top-level member of the plan" to stderr for
// every member of `plan` not in `known`, in the object's order. Returns the names ignored.
// @pre plan is a JSON object
std::vector<std::string> ignore_unknown_top_level(const nlohmann::json& plan, const std::vector<std::string>& known,
                                                  const std::string& file);

}  // namespace kvlayout::check

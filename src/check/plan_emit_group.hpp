#pragma once
// `kvlayout plan emit` for a group translation: one plan per rank pair that exchanges data, the
// descriptor family a NIXL-style connector registers between that source rank's and that target rank's
// buffers. Each is emit_plan (plan_emit.hpp) of the piece pair (source instance -> target instance
// restricted to its assigned box; emit/group_pieces.hpp), so each is valid input to `plan check` of that
// pair.
#include <functional>

#include <nlohmann/json.hpp>

#include "check/plan_emit.hpp"
#include "emit/group_pieces.hpp"

namespace kvlayout::check {

// @pre every piece's proof is plan_emittable. `options_for` gives each piece's options (tables are per
// rank pair); a SUBSET piece without a --scope gets its assignment box as its scope. {"comment", "source_group", "target_group", "cache", "grade", "plans": [piece_json + "plan"]}.
// Throws as emit_plan does.
nlohmann::ordered_json emit_group_plans(const prove::GroupProof& g, const std::vector<emit::GroupPiece>& pieces,
                                        const std::function<PlanEmitOptions(const prove::Proof&)>& options_for);

}  // namespace kvlayout::check

#pragma once
// The families form of an emitted plan (plan_emit_families.cpp): one family per box of a move-plan cell.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "prove/proof.hpp"

namespace kvlayout::check {

// @pre the proof licenses the move. The `families` list of the plan; SpecError for a --scope that is not
// a combination of single-coordinate bounds; emit::EmitError for a pair the move plan cannot express.
nlohmann::json emitted_families(const prove::Proof& proof, const std::optional<std::string>& scope);

}  // namespace kvlayout::check

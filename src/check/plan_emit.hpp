#pragma once
// `kvlayout plan emit`: the verified transfer plan of a proven pair, with the fewest contiguous runs. It is
// read off the emitter's move plan (emit/plan.hpp): each cell's common contiguous run is one family
// member's bytes, its other modes are the family's `over` variables, and each side's byte offset is the
// cell's affine side form (element offset x element bytes) over those variables and the table reads.
// Three forms, each valid input to `plan check` (specs/plans.md): `families` (symbolic, independent of the
// tables), `runs` and `descriptors` (concrete, for given block tables).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "layout/block_tables.hpp"
#include "prove/proof.hpp"

namespace kvlayout::check {

enum class PlanFormat { Families, Runs, Descriptors };

struct PlanEmitOptions {
  PlanFormat format = PlanFormat::Families;
  std::optional<std::string> scope;               // a truth value over coordinates: emit only these positions
  std::optional<layout::BlockTables> source_tables;  // concrete forms: default identity
  std::optional<layout::BlockTables> target_tables;
  std::int64_t source_base = 0;                   // concrete forms: the first region's address per side; the
  std::int64_t target_base = 0;                   // others follow at 4 KiB-aligned offsets
  std::int64_t max_descriptors = 10'000'000;     // descriptors form: refuse past this (SpecError)
};

// The whole-pair refusal `emit` applies: only EXACT_BYTE, EXACT_TOKEN and SUBSET proofs are emitted.
bool plan_emittable(const prove::Proof& proof);

// @pre plan_emittable(proof). Throws SpecError for a --scope that is not a combination of single-coordinate
// bounds, or a descriptor list past max_descriptors; emit::EmitError for a pair the move plan cannot express.
nlohmann::json emit_plan(const prove::Proof& proof, const PlanEmitOptions& options);

}  // namespace kvlayout::check

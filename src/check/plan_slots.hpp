#pragma once
// The `slots` form: a request's tokens and the block (or slot) ids that hold them on each side, as
// schedulers, SGLang and LMCache hold them (specs/plans.md). Decided on the index map itself, which is
// what a slot map can get wrong: ids inside the table range (OUT_OF_BOUNDS), no destination block or
// slot reused (ALIASED), tokens kept in place (slot % block_size == token % block_size, the tokens of one
// block in one block; a source block or slot read for two tokens: WRONG_MAPPING), no block or slot
// written beyond the request (FRAME_VIOLATION), a block or slot for every token (UNCOVERED). When the
// map passes, it defines a block table on each side, and the move it asks for is exactly the layouts'
// translation under those tables restricted to the request's tokens: its bytes are counted with the
// expected move (check/expected_move.hpp) so `checked` reports them.
#include <string>

#include <nlohmann/json.hpp>

#include "check/result.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

// @pre plan["form"] == "slots"; both sides fit.
CheckResult check_slot_plan(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                            const std::string& file, const prove::ProveOptions& options);

}  // namespace kvlayout::check

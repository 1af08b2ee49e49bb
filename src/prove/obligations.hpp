#pragma once
// The obligations, one function each, in the order a proof runs them. Each decides its question over the
// whole index space (by an exact normaliser step or a solver query, never by enumerating positions) and
// returns a result with a re-checked counterexample when refuted.
#include <memory>

#include "verdict/obligation.hpp"
#include "prove/pair.hpp"
#include "prove/session.hpp"
#include "spec/layout.hpp"

namespace kvlayout::prove {

// fits(pair): both layouts hold the same content, with the same coordinate extents where both are bound.
ObligationResult check_content(const layout::BoundLayout& source, const layout::BoundLayout& target);
// fits(side): the layout's requirements hold on the cache shape.
ObligationResult check_fits(const layout::BoundLayout& bound, Side side);
// defined(side): every domain and index expression the evaluator computes evaluates without error (no
// zero divisor, no 64-bit overflow). Proved or unknown; where it fails, throws the evaluator's
// spec::SpecError for a re-checked witness coordinate (bad input, exit 2 — never a grade).
ObligationResult check_defined(Session& session, const Pair& pair, Side side);
// in-bounds(side): every held position's indices, table entries and offset lie within their ranges.
ObligationResult check_in_bounds(Session& session, const Pair& pair, Side side);
// injective(side): no two held positions share an element. `in_bounds` says in-bounds(side) was proven,
// which lets the proof split into a stride check and an index-vector query.
ObligationResult check_injective(Session& session, const Pair& pair, Side side, bool in_bounds);
// covers: every position the target holds, the source holds.
ObligationResult check_covers(Session& session, const Pair& pair);
// carries: every position the source holds, the target holds.
ObligationResult check_carries(Session& session, const Pair& pair);
// values: every source element value survives the conversion to the target's type and back, and the
// quantisation scale is kept.
ObligationResult check_values(Session& session, const Pair& pair, const spec::Layout& source, const spec::Layout& target);
// padding: every element of the source's storage is addressed by some position.
// @pre in-bounds(source) and injective(source) proven.
ObligationResult check_padding(Session& session, const Pair& pair);

}  // namespace kvlayout::prove

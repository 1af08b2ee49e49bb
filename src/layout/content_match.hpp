#pragma once
// Whether two bound layouts hold the same content: one content name, the same coordinates in the same
// order, and — where both sides are bound — the same extent for every coordinate. Two layouts of one
// custom content with different extents ({x: 3} vs {x: 4}) do not hold the same positions, and a move
// between them is never exact; comparing names alone once graded such a pair EXACT_BYTE.
// The one definition used by the prover (fits(pair)), the counterexample witnesses and the cross-check.
#include <optional>
#include <string>

#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

// nullopt when the contents match; otherwise what differs, in one line.
// A side that does not fit its cache shape has no bound extents: only names are compared for it.
std::optional<std::string> content_mismatch(const BoundLayout& source, const BoundLayout& target);

}  // namespace kvlayout::layout

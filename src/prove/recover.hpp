#pragma once
// The exact normaliser's second tool: a syntactic proof that a view's index vector determines the
// position. Each rule says which facts about the coordinates the value of an index expression fixes:
//   c, c + k, c - k            fix c
//   table[e]                   fixes what e fixes (tables are injective; entries proven in range)
//   a * K + b, 0 <= b < K      fixes what a fixes and what b fixes (mixed radix; b's range by intervals)
//   a * K                      fixes what a fixes
//   e / m, e % m               fix "c div m", "c mod m" for e = c; together they fix c
// If every coordinate that varies within the view's domain (other than the one selecting the instance)
// is fixed, two positions with equal index vectors are equal: the index map is injective. Every rule is
// sound; when the rules do not apply, the question goes to the solver.
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"

namespace kvlayout::prove {

// @pre in-bounds proven for the view (table entries lie inside their tables).
// @return the coordinates not recovered (empty: the index vector is injective on the view's domain).
std::vector<std::string> unrecovered_coordinates(const layout::BoundLayout& bound, const layout::BoundTensor& tensor,
                                                 const layout::BoundView& view);

}  // namespace kvlayout::prove

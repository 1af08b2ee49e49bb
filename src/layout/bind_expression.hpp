#pragma once
// A user-written expression (a check's --scope, an assumed offset formula, a plan's offsets) bound to a
// layout the way the binder binds a declaration's own: coordinate names become coordinates, parameters
// their values on the cache shape, table names lookups into the layout's tables. `extra` names further
// variables (a plan family's `over` variables), numbered after the coordinates: extra[i] becomes
// Coord(coord_names.size() + i), so an evaluator environment passes the coordinates, then the extras.
#include <string>
#include <vector>

#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

// @post the result has no Name node. Throws SpecError naming `file` and `path` (or the flag) for a parse
// error, an unknown name, or a constant part that overflows or divides by zero. With `want_truth`, the
// expression must be a truth value (a comparison, &&, ||, !); otherwise an integer.
expr::Expr bind_expression(const BoundLayout& bound, const std::string& text, const std::string& file,
                           const std::string& path, bool want_truth, const std::vector<std::string>& extra = {});

}  // namespace kvlayout::layout

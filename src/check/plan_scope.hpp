#pragma once
#include <cstdint>
// A plan's scope (a truth value over the content's coordinates, bound against TARGET) decided on a box of
// coordinates: true everywhere, false everywhere, or mixed. Interval reasoning (layout::range_of) on the
// comparisons, exact evaluation at a single point, so splitting a mixed box always terminates.
#include <vector>

#include "expr/expr.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"
#include "layout/interval.hpp"

namespace kvlayout::check {

enum class Tri { False, True, Mixed };

// @pre scope is a truth value bound against `target`; box has one interval per coordinate (lo <= hi).
// @post True/False: the scope has that value at every point of the box (tables at their concrete entries).
//       Mixed: the box is not a single point and interval reasoning could not decide it.
Tri scope_on(const expr::Expr& scope, const std::vector<layout::Interval>& box, const layout::BoundLayout& target,
             const layout::BlockTables& tables);

// The number of points of `box` where the scope holds, and the first such point (lexicographically by
// bisection order), by splitting mixed boxes in halves along their widest coordinate.
struct ScopeCount {
  std::int64_t count = 0;
  std::vector<std::int64_t> sample;  // empty when count == 0
};
ScopeCount count_in_scope(const expr::Expr& scope, const std::vector<layout::Interval>& box,
                          const layout::BoundLayout& target, const layout::BlockTables& tables);

// Whether a position is in scope (nullptr scope: always).
bool in_scope(const expr::Expr& scope, const std::vector<std::int64_t>& coord, const layout::BoundLayout& target,
              const layout::BlockTables& tables);

}  // namespace kvlayout::check

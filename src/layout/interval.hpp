#pragma once
// The exact normaliser's first tool: interval arithmetic over bound expressions. Every rule
// over-approximates the set of values an expression takes (sound), so "the interval lies within the
// extent" proves an in-bounds obligation without the solver; anything it cannot bound goes to Z3.
#include <cstdint>
#include <optional>
#include <vector>

#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

struct Interval {
  std::int64_t lo = 0;  // inclusive
  std::int64_t hi = 0;  // inclusive
};

// The coordinate box, narrowed by the top-level conjuncts of `domain` that bound one coordinate by a
// constant (e.g. "head >= 2 && head < 4 && kv == 0"). Other conjuncts are ignored (still sound).
std::vector<Interval> coordinate_bounds(const BoundLayout& bound, const expr::Expr& domain);

// A sound range for e when coordinates lie in `bounds` and every table entry lies in its table's range;
// nullopt when e cannot be bounded this way (a symbolic divisor, overflow, a truth value).
std::optional<Interval> range_of(const expr::Expr& e, const std::vector<Interval>& bounds,
                                 const BoundLayout& bound);

// A sufficient condition for e to evaluate without error (no division by zero, no 64-bit overflow in any
// subexpression) at every point of `bounds`, whatever entries the tables hold within their ranges.
// @post true => the concrete evaluator never throws ArithmeticError on e inside `bounds`; false says
//       nothing (the solver decides, see prove/defined.cpp).
bool defined_on(const expr::Expr& e, const std::vector<Interval>& bounds, const BoundLayout& bound);

}  // namespace kvlayout::layout

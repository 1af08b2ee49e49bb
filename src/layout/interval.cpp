#include "layout/interval.hpp"

#include <algorithm>

#include "expr/arithmetic.hpp"

namespace kvlayout::layout {

using expr::Op;

namespace {

// Narrows bounds[c] by "c op k" (or "k op c", mirrored).
void narrow(std::vector<Interval>& bounds, const expr::Expr& cmp) {
  const expr::Expr& a = cmp->args[0];
  const expr::Expr& b = cmp->args[1];
  Op op = cmp->op;
  const expr::Expr* coord = nullptr;
  std::int64_t k = 0;
  if (a->op == Op::Coord && b->op == Op::Literal) {
    coord = &a;
    k = b->value;
  } else if (a->op == Op::Literal && b->op == Op::Coord) {
    coord = &b;
    k = a->value;
    switch (op) {  // k op c  ==  c op' k
      case Op::Lt: op = Op::Gt; break;
      case Op::Le: op = Op::Ge; break;
      case Op::Gt: op = Op::Lt; break;
      case Op::Ge: op = Op::Le; break;
      default: break;
    }
  } else {
    return;
  }
  Interval& r = bounds[static_cast<std::size_t>((*coord)->value)];
  switch (op) {
    case Op::Eq: r.lo = std::max(r.lo, k); r.hi = std::min(r.hi, k); break;
    // c < INT64_MIN and c > INT64_MAX hold nowhere: an empty interval, without computing k -/+ 1.
    case Op::Lt: if (k == INT64_MIN) r = Interval{1, 0}; else r.hi = std::min(r.hi, k - 1); break;
    case Op::Le: r.hi = std::min(r.hi, k); break;
    case Op::Gt: if (k == INT64_MAX) r = Interval{1, 0}; else r.lo = std::max(r.lo, k + 1); break;
    case Op::Ge: r.lo = std::max(r.lo, k); break;
    default: break;
  }
}

void conjuncts(const expr::Expr& e, std::vector<Interval>& bounds) {
  if (e->op == Op::And) {
    conjuncts(e->args[0], bounds);
    conjuncts(e->args[1], bounds);
    return;
  }
  switch (e->op) {
    case Op::Eq: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      narrow(bounds, e);
      break;
    default:
      break;
  }
}


}  // namespace

std::vector<Interval> coordinate_bounds(const BoundLayout& bound, const expr::Expr& domain) {
  std::vector<Interval> bounds;
  for (std::int64_t e : bound.coord_extents) bounds.push_back({0, e - 1});
  conjuncts(domain, bounds);
  return bounds;
}

std::optional<Interval> range_of(const expr::Expr& e, const std::vector<Interval>& bounds,
                                 const BoundLayout& bound) {
  try {
    switch (e->op) {
      case Op::Literal: return Interval{e->value, e->value};
      case Op::Coord: return bounds[static_cast<std::size_t>(e->value)];
      case Op::Lookup: {
        // The entry itself must evaluate: a bound for the value says nothing about an entry that fails.
        if (!range_of(e->args[0], bounds, bound)) return std::nullopt;
        const auto& t = bound.tables[static_cast<std::size_t>(e->value)];
        return Interval{t.first, t.end - 1};
      }
      case Op::Neg: {
        auto a = range_of(e->args[0], bounds, bound);
        if (!a) return std::nullopt;
        return Interval{expr::checked_neg(a->hi), expr::checked_neg(a->lo)};
      }
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Min: case Op::Max: {
        auto a = range_of(e->args[0], bounds, bound);
        auto b = range_of(e->args[1], bounds, bound);
        if (!a || !b) return std::nullopt;
        switch (e->op) {
          case Op::Add: return Interval{expr::checked_add(a->lo, b->lo), expr::checked_add(a->hi, b->hi)};
          case Op::Sub: return Interval{expr::checked_sub(a->lo, b->hi), expr::checked_sub(a->hi, b->lo)};
          case Op::Min: return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
          case Op::Max: return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
          default: {
            std::int64_t p[4] = {expr::checked_mul(a->lo, b->lo), expr::checked_mul(a->lo, b->hi),
                                 expr::checked_mul(a->hi, b->lo), expr::checked_mul(a->hi, b->hi)};
            return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
          }
        }
      }
      case Op::Div: case Op::Mod: case Op::CeilDiv: {
        if (e->args[1]->op != Op::Literal || e->args[1]->value <= 0) return std::nullopt;
        std::int64_t c = e->args[1]->value;
        auto a = range_of(e->args[0], bounds, bound);
        if (!a) return std::nullopt;
        if (e->op == Op::Div) return Interval{expr::floor_div(a->lo, c), expr::floor_div(a->hi, c)};
        if (e->op == Op::CeilDiv) return Interval{expr::ceil_div(a->lo, c), expr::ceil_div(a->hi, c)};
        if (expr::floor_div(a->lo, c) == expr::floor_div(a->hi, c))
          return Interval{expr::floor_mod(a->lo, c), expr::floor_mod(a->hi, c)};
        return Interval{0, c - 1};
      }
      default:
        return std::nullopt;
    }
  } catch (const expr::ArithmeticError&) {
    return std::nullopt;
  }
}

bool defined_on(const expr::Expr& e, const std::vector<Interval>& bounds, const BoundLayout& bound) {
  switch (e->op) {
    case Op::Literal: case Op::Coord: return true;
    // Truth values are never out of range; their operands must evaluate (&& and || short-circuit in the
    // evaluator, so requiring both operands is stronger than needed: still sufficient).
    case Op::Not: case Op::IsPow2:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
    case Op::And: case Op::Or:
      for (const auto& a : e->args)
        if (!defined_on(a, bounds, bound)) return false;
      return true;
    // Arithmetic: range_of bounds every subexpression with checked operations and refuses a divisor that
    // is not a positive constant, so a range proves every intermediate value fits and no divisor is 0.
    default:
      return range_of(e, bounds, bound).has_value();
  }
}

}  // namespace kvlayout::layout

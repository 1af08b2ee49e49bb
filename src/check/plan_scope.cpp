#include "check/plan_scope.hpp"

#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

Tri negate(Tri t) { return t == Tri::Mixed ? t : (t == Tri::True ? Tri::False : Tri::True); }

bool is_point(const std::vector<layout::Interval>& box) {
  for (const auto& i : box)
    if (i.lo != i.hi) return false;
  return true;
}

Tri compare(expr::Op op, const layout::Interval& a, const layout::Interval& b) {
  using expr::Op;
  switch (op) {
    case Op::Lt: return a.hi < b.lo ? Tri::True : (a.lo >= b.hi ? Tri::False : Tri::Mixed);
    case Op::Le: return a.hi <= b.lo ? Tri::True : (a.lo > b.hi ? Tri::False : Tri::Mixed);
    case Op::Gt: return a.lo > b.hi ? Tri::True : (a.hi <= b.lo ? Tri::False : Tri::Mixed);
    case Op::Ge: return a.lo >= b.hi ? Tri::True : (a.hi < b.lo ? Tri::False : Tri::Mixed);
    case Op::Eq:
      if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo) return Tri::True;
      return (a.hi < b.lo || b.hi < a.lo) ? Tri::False : Tri::Mixed;
    case Op::Ne:
      if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo) return Tri::False;
      return (a.hi < b.lo || b.hi < a.lo) ? Tri::True : Tri::Mixed;
    default: return Tri::Mixed;
  }
}

Tri interval_truth(const expr::Expr& e, const std::vector<layout::Interval>& box, const layout::BoundLayout& b) {
  using expr::Op;
  switch (e->op) {
    case Op::Literal: return e->value != 0 ? Tri::True : Tri::False;
    case Op::Not: return negate(interval_truth(e->args[0], box, b));
    case Op::And: {
      Tri l = interval_truth(e->args[0], box, b);
      if (l == Tri::False) return l;
      Tri r = interval_truth(e->args[1], box, b);
      if (r == Tri::False) return r;
      return l == Tri::True && r == Tri::True ? Tri::True : Tri::Mixed;
    }
    case Op::Or: {
      Tri l = interval_truth(e->args[0], box, b);
      if (l == Tri::True) return l;
      Tri r = interval_truth(e->args[1], box, b);
      if (r == Tri::True) return r;
      return l == Tri::False && r == Tri::False ? Tri::False : Tri::Mixed;
    }
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: {
      auto a = layout::range_of(e->args[0], box, b), c = layout::range_of(e->args[1], box, b);
      if (!a || !c) return Tri::Mixed;
      return compare(e->op, *a, *c);
    }
    default: return Tri::Mixed;
  }
}

}  // namespace

bool in_scope(const expr::Expr& scope, const std::vector<std::int64_t>& coord, const layout::BoundLayout& target,
              const layout::BlockTables& tables) {
  if (!scope) return true;
  expr::Environment env{coord, [&](int table, std::int64_t entry) -> std::int64_t {
                          const auto& t = target.tables[static_cast<std::size_t>(table)];
                          if (entry < 0 || entry >= t.length)
                            throw spec::SpecError("", "/scope", t.name + "[" + std::to_string(entry) + "]",
                                                  "a scope whose table reads stay inside the table (length " +
                                                      std::to_string(t.length) + ")");
                          return tables.entry(static_cast<std::size_t>(table), entry);
                        }};
  try {
    return expr::evaluate(scope, env) != 0;
  } catch (const expr::ArithmeticError& a) {
    throw spec::SpecError("", "/scope", std::string("a scope that fails at ") + layout::format_coordinate(target, coord) +
                                            ": " + a.what(),
                          "a scope defined at every position");
  }
}

Tri scope_on(const expr::Expr& scope, const std::vector<layout::Interval>& box, const layout::BoundLayout& target,
             const layout::BlockTables& tables) {
  if (!scope) return Tri::True;
  if (is_point(box)) {
    std::vector<std::int64_t> coord;
    for (const auto& i : box) coord.push_back(i.lo);
    return in_scope(scope, coord, target, tables) ? Tri::True : Tri::False;
  }
  return interval_truth(scope, box, target);
}

ScopeCount count_in_scope(const expr::Expr& scope, const std::vector<layout::Interval>& box,
                          const layout::BoundLayout& target, const layout::BlockTables& tables) {
  ScopeCount out;
  const Tri t = scope_on(scope, box, target, tables);
  if (t == Tri::False) return out;
  if (t == Tri::True) {
    std::vector<std::int64_t> extents;
    for (const auto& i : box) extents.push_back(i.hi - i.lo + 1);
    out.count = layout::box_volume(extents);
    for (const auto& i : box) out.sample.push_back(i.lo);
    return out;
  }
  // Mixed, so not a point: halve the widest coordinate.
  std::size_t widest = 0;
  for (std::size_t c = 1; c < box.size(); ++c)
    if (box[c].hi - box[c].lo > box[widest].hi - box[widest].lo) widest = c;
  std::vector<layout::Interval> low = box, high = box;
  const std::int64_t mid = box[widest].lo + (box[widest].hi - box[widest].lo) / 2;
  low[widest].hi = mid;
  high[widest].lo = mid + 1;
  for (const auto* half : {&low, &high}) {
    ScopeCount part = count_in_scope(scope, *half, target, tables);
    if (out.sample.empty()) out.sample = part.sample;
    out.count += part.count;
  }
  return out;
}

}  // namespace kvlayout::check

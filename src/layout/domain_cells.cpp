#include "layout/domain_cells.hpp"

#include <algorithm>
#include <set>

#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"

namespace kvlayout::layout {

using expr::Op;

namespace {

// Adds the cut points of every atom to `cuts` (a cut at k separates values < k from values >= k).
bool collect_cuts(const expr::Expr& e, std::vector<std::set<std::int64_t>>& cuts) {
  switch (e->op) {
    case Op::Literal: return true;
    case Op::Not: return collect_cuts(e->args[0], cuts);
    case Op::And: case Op::Or: return collect_cuts(e->args[0], cuts) && collect_cuts(e->args[1], cuts);
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: {
      const expr::Expr *coord = nullptr, *literal = nullptr;
      if (e->args[0]->op == Op::Coord && e->args[1]->op == Op::Literal) { coord = &e->args[0]; literal = &e->args[1]; }
      if (e->args[1]->op == Op::Coord && e->args[0]->op == Op::Literal) { coord = &e->args[1]; literal = &e->args[0]; }
      if (!coord) return false;
      auto& c = cuts[static_cast<std::size_t>((*coord)->value)];
      std::int64_t k = (*literal)->value;
      // Where the atom's truth can change: between k - 1 and k (c < k, c >= k), between k and k + 1
      // (c <= k, c > k), or both (c == k, c != k). Mirrored when the literal is on the left.
      Op op = e->op;
      if (coord == &e->args[1]) {
        switch (op) {
          case Op::Lt: op = Op::Gt; break;
          case Op::Le: op = Op::Ge; break;
          case Op::Gt: op = Op::Lt; break;
          case Op::Ge: op = Op::Le; break;
          default: break;
        }
      }
      if (op != Op::Le && op != Op::Gt) c.insert(k);
      if (op != Op::Lt && op != Op::Ge && k < INT64_MAX) c.insert(k + 1);
      return true;
    }
    default:
      return false;
  }
}

std::string ranges_text(std::vector<Interval> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.lo < b.lo; });
  std::vector<Interval> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  std::string s;
  for (const auto& m : merged)
    s += (s.empty() ? "" : ", ") + (m.lo == m.hi ? std::to_string(m.lo) : std::to_string(m.lo) + ".." + std::to_string(m.hi));
  return s;
}

}  // namespace

std::optional<std::vector<Cell>> cells(const std::vector<std::int64_t>& extents,
                                       const std::vector<expr::Expr>& predicates) {
  std::vector<std::set<std::int64_t>> cuts(extents.size());
  for (const auto& p : predicates)
    if (!collect_cuts(p, cuts)) return std::nullopt;
  // Segments of each coordinate's range between consecutive cuts.
  std::vector<std::vector<Interval>> segments(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) {
    std::int64_t start = 0;
    for (std::int64_t k : cuts[i]) {
      if (k <= start || k >= extents[i]) continue;
      segments[i].push_back({start, k - 1});
      start = k;
    }
    segments[i].push_back({start, extents[i] - 1});
  }
  std::vector<Cell> out;
  std::vector<std::size_t> pick(extents.size(), 0);
  std::vector<std::int64_t> point(extents.size());
  for (;;) {
    Cell cell;
    cell.volume = 1;
    for (std::size_t i = 0; i < extents.size(); ++i) {
      const Interval& r = segments[i][pick[i]];
      cell.ranges.push_back(r);
      cell.volume = expr::checked_mul(cell.volume, r.hi - r.lo + 1);
      point[i] = r.lo;
    }
    expr::Environment env{point, nullptr};
    for (const auto& p : predicates) cell.truth.push_back(expr::evaluate(p, env) != 0);
    out.push_back(std::move(cell));
    std::size_t i = 0;
    while (i < extents.size() && ++pick[i] == segments[i].size()) pick[i++] = 0;
    if (i == extents.size()) break;
  }
  return out;
}

expr::Expr held_predicate(const BoundLayout& bound) {
  // Starts from the first view's domain rather than a literal false: `0 || x` is not folded, and the
  // predicate is printed (a plan's scope), where `0` is an integer, not a truth value.
  expr::Expr any;
  for (const auto& t : bound.tensors)
    for (const auto& v : t.views) any = any ? expr::fold(expr::make(Op::Or, {any, v.holds})) : v.holds;
  return any ? any : expr::make(Op::Lt, {expr::literal(1), expr::literal(0)});  // no view: holds nothing
}

std::optional<std::int64_t> domain_size(const BoundLayout& bound) {
  auto cs = cells(bound.coord_extents, {held_predicate(bound)});
  if (!cs) return std::nullopt;
  std::int64_t n = 0;
  for (const auto& c : *cs)
    if (c.truth[0]) n = expr::checked_add(n, c.volume);
  return n;
}

}  // namespace kvlayout::layout

namespace kvlayout::layout {

std::optional<PositionSet> describe_positions(const BoundLayout& bound, const std::vector<expr::Expr>& predicates,
                                              const std::function<bool(const std::vector<bool>&)>& select) {
  auto cs = cells(bound.coord_extents, predicates);
  if (!cs) return std::nullopt;
  PositionSet set;
  std::vector<std::vector<Interval>> spans(bound.coord_extents.size());
  for (const auto& cell : *cs) {
    if (!select(cell.truth)) continue;
    set.count = expr::checked_add(set.count, cell.volume);
    for (std::size_t i = 0; i < spans.size(); ++i) spans[i].push_back(cell.ranges[i]);
  }
  if (set.count == 0) return set;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    std::string text = ranges_text(spans[i]);
    std::int64_t e = bound.coord_extents[i];
    std::string full = e == 1 ? "0" : "0.." + std::to_string(e - 1);
    if (text != full) set.spans.push_back(bound.coord_names[i] + " " + text + " of " + full);
  }
  return set;
}

}  // namespace kvlayout::layout

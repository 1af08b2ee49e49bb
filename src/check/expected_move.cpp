// The expected move (expected_move.hpp) built by walking every cell of the emitter's move plan
// (cell_walk.hpp), splitting runs only where the scope changes, then sorted and checked disjoint. Going
// back from a run to its positions is run_positions.cpp's.
#include "check/expected_move.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "check/cell_walk.hpp"
#include "check/plan_scope.hpp"
#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "layout/domain_cells.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

using namespace move_walk;

struct Builder {
  const layout::BoundLayout& S;
  const layout::BoundLayout& T;
  const layout::BlockTables& ts;
  const layout::BlockTables& tt;
  const expr::Expr& scope;
  const StorageLine& sl;
  const StorageLine& tl;
  ExpectedMove& move;
  // The scope's value on the last boxes seen, keyed by the box restricted to the coordinates it reads.
  std::map<std::vector<std::int64_t>, Tri> memo;

  Tri scope_of(const CellWalk& w, const std::vector<layout::Interval>& box) {
    if (!scope) return Tri::True;
    std::vector<std::int64_t> key;
    for (int c : w.scope_coords) {
      key.push_back(box[static_cast<std::size_t>(c)].lo);
      key.push_back(box[static_cast<std::size_t>(c)].hi);
    }
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
    if (memo.size() > (1u << 20)) memo.clear();
    return memo[key] = scope_on(scope, box, T, tt);
  }

  bool slack = false;  // the run being walked lies in the slack of a partial last block

  void emit_piece(int cell, std::int64_t ordinal, std::int64_t first, std::int64_t elements, const SidePoint& sp,
                  const SidePoint& tp, const emit::Cell& c, const std::vector<std::int64_t>& coord) {
    if (slack && (!fits(tp, first, elements, c.target, T) || !fits(sp, first, elements, c.source, S))) return;
    const std::int64_t dst = line_byte(tp, first, elements, c.target, T, tl, coord);
    const std::int64_t src = line_byte(sp, first, elements, c.source, S, sl, coord);
    const std::int64_t bytes = elements * tl.element_bytes;
    if (!slack) move.positions += elements;
    if (!move.runs.empty()) {
      // Continue the last run when the bytes continue in both lines and the positions continue in walk
      // order: the same loop iteration's next elements, or whole runs of the next iterations (so that
      // position_at can still recover each element: ordinal + e / run_elements, e % run_elements).
      ExpectedRun& last = move.runs.back();
      const std::int64_t run_elements = c.run_elements;
      const std::int64_t next = last.first_element + last.bytes / tl.element_bytes;  // elements from last.ordinal's start
      const bool same_iteration = last.ordinal == ordinal && next == first;
      const bool next_iteration = first == 0 && elements == run_elements && last.first_element == 0 && next % run_elements == 0 &&
                                  last.ordinal + next / run_elements == ordinal;
      if (last.slack == slack && last.cell == cell && last.dst + last.bytes == dst && last.src + last.bytes == src &&
          (same_iteration || next_iteration)) {
        last.bytes += bytes;
        return;
      }
    }
    move.runs.push_back({dst, src, bytes, ordinal, first, cell, slack});
  }

  // The run's elements [first, first + prod(extent of run modes below k)), the modes from k up fixed: keep
  // the in-scope ones, splitting on mode k-1 where the scope changes.
  void split(const CellWalk& w, int cell, std::int64_t ordinal, std::size_t k, std::int64_t first,
             std::vector<std::int64_t>& vals, const std::vector<std::int64_t>& coord0, const SidePoint& sp,
             const SidePoint& tp) {
    const emit::Cell& c = *w.cell;
    if (!scope) {
      emit_piece(cell, ordinal, first, c.run_elements, sp, tp, c, coord0);
      return;
    }
    std::int64_t below = 1;
    std::vector<std::int64_t> span(c.coords.size(), 0);
    for (std::size_t i = 0; i < k; ++i) {
      const emit::Mode& m = c.modes[static_cast<std::size_t>(c.run[i])];
      below *= m.extent;
      span[static_cast<std::size_t>(m.coord)] += m.weight * (m.extent - 1);
    }
    std::vector<std::int64_t> coord = coords_of(c, vals);
    std::vector<layout::Interval> box;
    for (std::size_t i = 0; i < coord.size(); ++i) box.push_back({coord[i], coord[i] + span[i]});
    const Tri t = scope_of(w, box);
    if (t == Tri::False) return;
    if (t == Tri::True) {
      emit_piece(cell, ordinal, first, below, sp, tp, c, coord0);
      return;
    }
    const int mode = c.run[k - 1];  // Mixed is never a point, so k >= 1
    const std::int64_t step = below / c.modes[static_cast<std::size_t>(mode)].extent;
    for (std::int64_t v = 0; v < c.modes[static_cast<std::size_t>(mode)].extent; ++v) {
      vals[static_cast<std::size_t>(mode)] = v;
      split(w, cell, ordinal, k - 1, first + v * step, vals, coord0, sp, tp);
    }
    vals[static_cast<std::size_t>(mode)] = 0;
  }

  void walk(int cell_index) {
    const emit::Cell& c = move.plan.cells[static_cast<std::size_t>(cell_index)];
    const CellWalk w = walk_of(c, scope);
    move.iterated.push_back(w.iterated);
    std::vector<std::int64_t> vals(c.modes.size(), 0), coord;
    std::int64_t total = 1;
    for (int m : w.iterated) total = expr::checked_mul(total, c.modes[static_cast<std::size_t>(m)].extent);
    for (std::int64_t ordinal = 0; ordinal < total; ++ordinal) {
      if (ordinal > 0)  // odometer: the last iterated mode is the fastest
        for (std::size_t k = w.iterated.size(); k-- > 0;) {
          auto& v = vals[static_cast<std::size_t>(w.iterated[k])];
          if (++v < c.modes[static_cast<std::size_t>(w.iterated[k])].extent) break;
          v = 0;
        }
      coords_into(c, vals, coord);
      bool beyond = false, token_only = true;
      for (int g : w.guarded)
        if (coord[static_cast<std::size_t>(g)] > c.coords[static_cast<std::size_t>(g)].hi) {
          beyond = true;
          token_only = token_only && g == move.plan.token_coord;
        }
      // Past the cell: the top digit's last value runs beyond it. Only the token's is slack (a partial
      // last block), and only at the token's own upper end, not at a cell boundary inside the range.
      if (beyond && (!token_only || c.coords[static_cast<std::size_t>(move.plan.token_coord)].hi + 1 !=
                                        S.coord_extents[static_cast<std::size_t>(move.plan.token_coord)]))
        continue;
      slack = beyond;
      if (slack) ++move.slack_iterations;  // counted before tables are read: the same for every table
      if (!slack) {
        const SidePoint sp = side_point(c.source, vals, coord, S, ts);
        const SidePoint tp = side_point(c.target, vals, coord, T, tt);
        split(w, cell_index, ordinal, c.run.size(), 0, vals, coord, sp, tp);
        continue;
      }
      try {  // slack that reads a table past its end, or that the scope cannot evaluate, is simply not slack
        const SidePoint sp = side_point(c.source, vals, coord, S, ts);
        const SidePoint tp = side_point(c.target, vals, coord, T, tt);
        split(w, cell_index, ordinal, c.run.size(), 0, vals, coord, sp, tp);
      } catch (const spec::SpecError&) {
      } catch (const expr::ArithmeticError&) {
      }
    }
  }
};

// Phase: positions in scope that TARGET holds and SOURCE does not.
void count_missing(const layout::BoundLayout& S, const layout::BoundLayout& T, const layout::BlockTables& tt,
                   const expr::Expr& scope, ExpectedMove& move) {
  auto boxes = layout::cells(T.coord_extents, {layout::held_predicate(S), layout::held_predicate(T)});
  if (!boxes) throw emit::EmitError("a domain is not a combination of single-coordinate bounds");
  for (const auto& box : *boxes) {
    if (box.truth[0] || !box.truth[1]) continue;
    ScopeCount n = count_in_scope(scope, box.ranges, T, tt);
    if (n.count > 0 && move.missing_sample.empty()) move.missing_sample = n.sample;
    move.missing += n.count;
  }
}

}  // namespace

ExpectedMove expected_move(const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const layout::BlockTables& source_tables, const layout::BlockTables& target_tables,
                           const expr::Expr& scope, const StorageLine& source_line, const StorageLine& target_line) {
  ExpectedMove move;
  move.plan = emit::make_plan(source, target);
  Builder b{source, target, source_tables, target_tables, scope, source_line, target_line, move, {}};
  for (std::size_t c = 0; c < move.plan.cells.size(); ++c) b.walk(static_cast<int>(c));
  std::sort(move.runs.begin(), move.runs.end(), [](const ExpectedRun& a, const ExpectedRun& r) { return a.dst < r.dst; });
  // Slack that overlaps anything (on either side's account) is dropped; held positions that overlap are a
  // defect of the target declaration.
  std::vector<ExpectedRun> kept;
  kept.reserve(move.runs.size());
  for (const ExpectedRun& r : move.runs) {
    if (!kept.empty() && r.dst < kept.back().dst + kept.back().bytes && (r.slack || kept.back().slack)) {
      if (r.slack) continue;
      kept.back() = r;  // the previous one was slack
      continue;
    }
    kept.push_back(r);
  }
  move.runs = std::move(kept);
  for (std::size_t k = 1; k < move.runs.size(); ++k)
    if (move.runs[k].dst < move.runs[k - 1].dst + move.runs[k - 1].bytes) {
      const ExpectedRun& a = move.runs[k - 1];
      const ExpectedRun& r = move.runs[k];
      const std::int64_t eb = target_line.element_bytes;
      const auto p = position_at(move, target, a, (r.dst - a.dst) / eb);
      const auto q = position_at(move, target, r, 0);
      throw spec::SpecError(target.layout->file, "",
                            target.layout->name + " stores " + layout::format_coordinate(target, p) + " and " +
                                layout::format_coordinate(target, q) + " in one element",
                            "a target layout that stores each position in its own element (see prove's injective)");
    }
  count_missing(source, target, target_tables, scope, move);
  return move;
}

}  // namespace kvlayout::check

#include "emit/riding_runs.hpp"

#include <algorithm>
#include <cstdlib>

#include "emit/sibling_cells.hpp"

namespace kvlayout::emit {

namespace {

bool same_mode(const Cell& a, int ma, const Cell& b, int mb) {
  const Mode &x = a.modes[static_cast<std::size_t>(ma)], &y = b.modes[static_cast<std::size_t>(mb)];
  if (x.coord != y.coord || x.weight != y.weight || x.extent != y.extent || x.top_of_token || y.top_of_token) return false;
  const CellCoordinate &cx = a.coords[static_cast<std::size_t>(x.coord)], &cy = b.coords[static_cast<std::size_t>(y.coord)];
  return cx.lo == cy.lo && cx.hi == cy.hi && cx.inverse < 0 && cy.inverse < 0 && !cx.guarded && !cy.guarded;
}

// The tile with its innermost loop folded into its row blocks, where that loop's mode steps both sides by
// its stride alone; nothing otherwise.
std::optional<Cell> folded(const Cell& tile) {
  if (tile.loops.size() < 2) return std::nullopt;
  const int m = tile.loops.back();
  const Mode& mode = tile.modes[static_cast<std::size_t>(m)];
  if (mode.top_of_token || tile.coords[static_cast<std::size_t>(mode.coord)].guarded || tile.coords[static_cast<std::size_t>(mode.coord)].inverse >= 0)
    return std::nullopt;
  if (read_by_atoms(tile.source, m) || read_by_atoms(tile.target, m) || selects_instance(tile, m)) return std::nullopt;
  Cell out = tile;
  out.loops.pop_back();
  out.tile_folded = m;
  return out;
}

// Whether the rider's runs lie in the folded tile's rows: the same tensor instances, less than the folded
// mode's source stride from the tile's (K beside V in one token row).
bool reads_the_tile_rows(const Cell& fold, const Cell& rider) {
  const SideForm &t = fold.source, &r = rider.source;
  const std::int64_t apart = std::abs(r.constant - t.constant);
  return r.tensor == t.tensor && r.instance_first == t.instance_first && r.instance_coord == t.instance_coord &&
         apart < std::abs(t.stride[static_cast<std::size_t>(fold.tile_folded)]);
}

}  // namespace

std::optional<std::vector<std::string>> rider_loop_values(const Plan& plan, const Cell& tile, const Cell& rider, const std::string& token) {
  // The tile's rows: the slots of an inverted table, one mode over the table's whole range.
  const Mode& across = tile.modes[static_cast<std::size_t>(tile.tile_target_contiguous)];
  const CellCoordinate& slots = tile.coords[static_cast<std::size_t>(across.coord)];
  if (!tile.tile_source_rows_gathered || slots.inverse < 0 || slots.modes.size() != 1 || across.weight != 1 || !tile.tile_target_merged.empty())
    return std::nullopt;
  // Every slot of the range is a row (no bound check cuts the rows short), so every moved token's is.
  if (slots.guarded || tile.tile_guard == across.coord || across.extent != slots.hi - slots.lo + 1) return std::nullopt;
  // The rider's token coordinate: whole, every digit a loop, not inverted.
  const int tok = plan.token_coord;
  if (tok < 0 || static_cast<std::size_t>(tok) >= rider.coords.size()) return std::nullopt;
  const CellCoordinate& tokens = rider.coords[static_cast<std::size_t>(tok)];
  if (tokens.inverse >= 0 || tokens.lo != 0 || tokens.hi + 1 != plan.capacity || tokens.modes.empty()) return std::nullopt;
  for (int m : tokens.modes)
    if (std::find(rider.loops.begin(), rider.loops.end(), m) == rider.loops.end()) return std::nullopt;
  // The digits a mixed-radix split of the token (least weight 1, each weight the one below times its
  // extent, the top covering the capacity), so that the digits taken from `token` below compose it.
  std::vector<int> digits = tokens.modes;
  std::sort(digits.begin(), digits.end(), [&](int a, int b) { return rider.modes[static_cast<std::size_t>(a)].weight < rider.modes[static_cast<std::size_t>(b)].weight; });
  std::int64_t weight = 1;
  for (int m : digits) {
    const Mode& d = rider.modes[static_cast<std::size_t>(m)];
    if (d.weight != weight || d.extent < 1) return std::nullopt;
    weight *= d.extent;
  }
  if (weight < plan.capacity) return std::nullopt;
  if (tile.tile_folded < 0) return std::nullopt;
  std::vector<int> outer = tile.loops;
  outer.push_back(tile.tile_folded);
  std::vector<bool> taken(outer.size(), false);
  std::vector<std::string> values;
  for (int l : rider.loops) {
    const Mode& mode = rider.modes[static_cast<std::size_t>(l)];
    if (mode.coord == tok) {
      values.push_back("((" + token + ") / INT64_C(" + std::to_string(mode.weight) + ")) % INT64_C(" + std::to_string(mode.extent) + ")");
      continue;
    }
    std::size_t k = 0;
    while (k < outer.size() && (taken[k] || !same_mode(rider, l, tile, outer[k]))) ++k;
    if (k == outer.size()) return std::nullopt;
    taken[k] = true;
    values.push_back(tile.modes[static_cast<std::size_t>(outer[k])].var);
  }
  if (std::find(taken.begin(), taken.end(), false) != taken.end()) return std::nullopt;
  return values;
}

Plan fold_riding_runs(Plan plan, bool convert, const std::function<bool(const Cell&)>& straight_blocks) {
  if (convert) return plan;
  for (std::size_t t = 0; t < plan.cells.size(); ++t) {
    const Cell& tile = plan.cells[t];
    // Only a tile whose rows are one head's columns (nothing merged into its down axis) is folded.
    if (!tile.tile_source_rows_gathered || tile.tile_target_rows_gathered || !tile.tile_source_merged.empty() || !straight_blocks(tile)) continue;
    std::optional<Cell> fold = folded(tile);
    if (!fold) continue;
    for (std::size_t r = 0; r < plan.cells.size(); ++r) {
      const Cell& rider = plan.cells[r];
      if (r == t || !plain_runs(rider) || rider.ridden_by >= 0 || !rider.riders.empty() || !reads_the_tile_rows(*fold, rider)) continue;
      bool alone = true;
      for (std::size_t o = 0; o < plan.cells.size(); ++o) alone = alone && (o == r || !same_nest(rider, plan.cells[o]));
      if (!alone || !rider_loop_values(plan, *fold, rider, "token")) continue;
      fold->riders.push_back(static_cast<int>(r));
    }
    if (fold->riders.empty()) continue;
    for (int r : fold->riders) plan.cells[static_cast<std::size_t>(r)].ridden_by = static_cast<int>(t);
    plan.cells[t] = std::move(*fold);
  }
  return plan;
}

}  // namespace kvlayout::emit

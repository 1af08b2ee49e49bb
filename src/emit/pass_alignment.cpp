#include "emit/pass_alignment.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "emit/sibling_cells.hpp"

namespace kvlayout::emit {

std::size_t flattened_loops(const Cell& cell) { return cell.loops.size() >= 2 ? 2 : 1; }

namespace {

bool is_tile(const Cell& c) { return c.tile_target_contiguous >= 0; }

// The mode of `runs` equal to mode m of `tile`, among runs' loops; -1 if there is none.
int equal_loop_mode(const Cell& runs, const Cell& tile, int m) {
  const Mode& want = tile.modes[static_cast<std::size_t>(m)];
  for (int l : runs.loops) {
    const Mode& have = runs.modes[static_cast<std::size_t>(l)];
    if (have.coord == want.coord && have.weight == want.weight && have.extent == want.extent && have.top_of_token == want.top_of_token)
      return l;
  }
  return -1;
}

// `runs`'s loops led by tile's flattened loops, or nothing if runs lacks one of them.
std::optional<std::vector<int>> led_by(const Cell& runs, const Cell& tile) {
  std::vector<int> lead;
  for (std::size_t i = 0; i < flattened_loops(tile); ++i) {
    const int l = equal_loop_mode(runs, tile, tile.loops[i]);
    if (l < 0) return std::nullopt;
    lead.push_back(l);
  }
  std::vector<int> loops = lead;
  for (int l : runs.loops)
    if (std::find(lead.begin(), lead.end(), l) == lead.end()) loops.push_back(l);
  return loops;
}

}  // namespace

Plan align_interleaved_passes(Plan plan, int source_bytes) {
  for (Cell& runs : plan.cells) {
    if (is_tile(runs)) continue;
    for (const Cell& tile : plan.cells) {
      if (!is_tile(tile) || tile.loops.empty() || !within_a_page(runs.source, tile.source, source_bytes)) continue;
      const std::optional<std::vector<int>> loops = led_by(runs, tile);
      if (!loops || *loops == runs.loops) break;
      runs.loops = *loops;
      runs.source_order_from = -1;
      runs.target_order_loops.clear();
      runs.cpu_order = CpuOrder::none;
      runs.cpu_loops.clear();
      runs.cpu_loops_from = -1;
      break;
    }
  }
  return plan;
}

}  // namespace kvlayout::emit

#include "emit/run_pairs.hpp"

#include <algorithm>
#include <cstdlib>

namespace kvlayout::emit {

int run_pairs_level(const Cell& cell, int source_bytes, std::size_t first_level) {
  const std::size_t loops = cell.loops.size();
  if (cell.tile_target_contiguous >= 0 || cell.run_elements * source_bytes != 16 || loops < first_level + 2) return -1;
  auto level_of = [&](int m) { return static_cast<std::size_t>(std::find(cell.loops.begin(), cell.loops.end(), m) - cell.loops.begin()); };
  auto pairable = [&](int m) {
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    return mode.extent % 2 == 0 && !mode.top_of_token && cell.coords[static_cast<std::size_t>(mode.coord)].inverse < 0 &&
           !selects_instance(cell, m) && !read_by_atoms(cell.source, m) && !read_by_atoms(cell.target, m);
  };
  const int inner = cell.loops.back();
  if (!pairable(inner) || cell.target.stride[static_cast<std::size_t>(inner)] != cell.run_elements) return -1;
  for (std::size_t l = loops - 1; l-- > first_level;) {  // the nearest candidate first
    const int m = cell.loops[l];
    if (!pairable(m) || cell.source.stride[static_cast<std::size_t>(m)] != cell.run_elements) continue;
    bool checkable = true;
    for (const CellCoordinate& c : cell.coords) {
      const bool in_pair = std::find(c.modes.begin(), c.modes.end(), m) != c.modes.end();
      const bool in_inner = std::find(c.modes.begin(), c.modes.end(), inner) != c.modes.end();
      if (!c.guarded || (!in_pair && !in_inner)) continue;
      if (in_pair && in_inner) checkable = false;
      for (int d : c.modes)
        if (d != m && d != inner && level_of(d) >= l) checkable = false;
    }
    if (checkable) return static_cast<int>(l);
  }
  return -1;
}

namespace {

// Whether both paired loops' extents divide by 4: the condition of every four-by-four nest.
bool loops_divide_by_four(const Cell& cell, int level) {
  const auto extent = [&](int m) { return cell.modes[static_cast<std::size_t>(m)].extent; };
  return extent(cell.loops[static_cast<std::size_t>(level)]) % 4 == 0 && extent(cell.loops.back()) % 4 == 0;
}

}  // namespace

int run_group_side(const Cell& cell, int level) {
  const int paired = cell.loops[static_cast<std::size_t>(level)], inner = cell.loops.back();
  // Only where the source holds the runs packed: the innermost loop steps over a whole span of the paired
  // loop's runs (the legacy key block's head, pack after pack), so a step's four source lines lie together.
  const bool source_packed =
      std::abs(cell.source.stride[static_cast<std::size_t>(inner)]) == cell.run_elements * cell.modes[static_cast<std::size_t>(paired)].extent;
  return source_packed && loops_divide_by_four(cell, level) ? 4 : 2;
}

bool pairs_in_source_order(const Cell& cell, int level, int side) { return side == 4 && static_cast<std::size_t>(level) + 2 == cell.loops.size(); }

bool quads_where_cpu_picks(const Cell& cell, int level) { return run_group_side(cell, level) == 2 && loops_divide_by_four(cell, level); }

}  // namespace kvlayout::emit

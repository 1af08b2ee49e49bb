#include "emit/staged_runs.hpp"

#include <algorithm>

#include "emit/run_pairs.hpp"

namespace kvlayout::emit {

namespace {

// Whether loop mode m is a plain counter: a fixed extent, no table lookup, inverted slot or instance.
bool plain(const Cell& cell, int m) {
  const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
  return !mode.top_of_token && cell.coords[static_cast<std::size_t>(mode.coord)].inverse < 0 && !selects_instance(cell, m) &&
         !read_by_atoms(cell.source, m) && !read_by_atoms(cell.target, m);
}

// The box's elements when `modes` with the run tile one contiguous span of side f from its first element
// (each stride, smallest first, the run's length times the smaller modes' extents), else 0.
std::int64_t contiguous_elements(const Cell& cell, const SideForm& f, std::vector<int> modes) {
  std::sort(modes.begin(), modes.end(), [&](int a, int b) { return f.stride[static_cast<std::size_t>(a)] < f.stride[static_cast<std::size_t>(b)]; });
  std::int64_t span = cell.run_elements;
  for (int m : modes) {
    if (f.stride[static_cast<std::size_t>(m)] != span) return 0;
    span *= cell.modes[static_cast<std::size_t>(m)].extent;
  }
  return span;
}

// Whether every bound-checked coordinate's digits among `modes` are its lowest ones.
bool checked_once(const Cell& cell, const std::vector<int>& modes) {
  for (const CellCoordinate& c : cell.coords) {
    if (!c.guarded) continue;
    bool inside = false;  // digits run most significant first: once inside the box, every later one is too
    for (int d : c.modes) {
      const bool in_box = std::find(modes.begin(), modes.end(), d) != modes.end();
      if (inside && !in_box) return false;
      inside = inside || in_box;
    }
  }
  return true;
}

}  // namespace

std::optional<StagedRuns> staged_runs(const Cell& cell, int source_bytes, std::size_t first_level) {
  const std::size_t loops = cell.loops.size();
  for (std::size_t level = first_level; level + 2 <= loops; ++level) {
    const std::vector<int> modes(cell.loops.begin() + static_cast<std::ptrdiff_t>(level), cell.loops.end());
    const int pairs = run_pairs_level(cell, source_bytes, level);
    if (pairs < 0 || static_cast<std::size_t>(pairs) + 2 >= loops) continue;  // no loop between the paired ones
    if (!std::all_of(modes.begin(), modes.end(), [&](int m) { return plain(cell, m); }) || !checked_once(cell, modes)) continue;
    const std::int64_t elements = contiguous_elements(cell, cell.source, modes);
    if (elements == 0 || contiguous_elements(cell, cell.target, modes) != elements) continue;
    if (elements * source_bytes > kMostStagedBytes) continue;
    StagedRuns out{level, modes, elements * source_bytes};
    std::sort(out.source_order.begin(), out.source_order.end(),
              [&](int a, int b) { return cell.source.stride[static_cast<std::size_t>(a)] > cell.source.stride[static_cast<std::size_t>(b)]; });
    if (cell.modes[static_cast<std::size_t>(out.source_order.front())].extent % 4 != 0) continue;
    return out;
  }
  return std::nullopt;
}

}  // namespace kvlayout::emit

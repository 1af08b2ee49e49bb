#include "emit/source_box.hpp"

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

// Whether the loop enclosing cell.loops[level..] (a plain counter of kPageStreams values or more) steps
// the source to the span right after theirs: the box is then one piece of a longer sequential span of the
// source, which the walk reads in one stream box after box. Quarters cut that stream into bursts of a
// quarter box, each restarted at the next box. Measured on the Zen 4 (256 MiB, 1 / 2 threads):
// DeepSeek's latents out of vLLM 0.3.3's BLNHC blocks (a block's 61 layers of 16 tokens, 18 KiB each, one
// after another) into SGLang's MLA page_first pool read 0.83x / 1.00x of memcpy in quarters and 1.32x /
// 1.17x box after box (hand edits, one process); `--ab-source` with each kernel from before against the
// generator's (two processes of 5) over the 19 distinct kernels whose box its loop continues: the four of
// 1152-byte runs (DeepSeek's latents out of SGLang's page_first -direct pool and vLLM 0.3.3's blocks)
// 1.12-1.81x / 1.16-1.42x as fast box after box; runs of 512 bytes (a head's K and V in vLLM 0.3.3's
// blocks) 0.91-1.44x / 0.81-1.26x; runs of 256 bytes (Dynamo's and vLLM 0.3.3's blocks into 0.3.3's and
// LMCache's) 0.62-1.17x / 0.79-1.15x, Dynamo's into vLLM 0.3.3's 0.62-0.72x at one thread. So only runs of
// kLeastContinuedRunBytes or more are read box after box.
constexpr std::int64_t kLeastContinuedRunBytes = 1024;
bool continued_in_source(const Cell& cell, std::size_t level) {
  if (level == 0 || level > cell.loops.size()) return false;
  const int enclosing = cell.loops[level - 1];
  if (!plain(cell, enclosing) || cell.modes[static_cast<std::size_t>(enclosing)].extent < kPageStreams) return false;
  const std::vector<int> with(cell.loops.begin() + static_cast<std::ptrdiff_t>(level - 1), cell.loops.end());
  return contiguous_elements(cell, cell.source, with) != 0;
}

}  // namespace

std::optional<SourceBox> source_box(const Cell& cell, int source_bytes, std::size_t level) {
  if (level >= cell.loops.size() || cell.tile_target_contiguous >= 0) return std::nullopt;
  const std::vector<int> modes(cell.loops.begin() + static_cast<std::ptrdiff_t>(level), cell.loops.end());
  if (!std::all_of(modes.begin(), modes.end(), [&](int m) { return plain(cell, m); }) || !checked_once(cell, modes)) return std::nullopt;
  const std::int64_t elements = contiguous_elements(cell, cell.source, modes);
  if (elements == 0) return std::nullopt;
  SourceBox box{level, modes, elements * source_bytes, contiguous_elements(cell, cell.target, modes) == elements};
  std::sort(box.source_order.begin(), box.source_order.end(),
            [&](int a, int b) { return cell.source.stride[static_cast<std::size_t>(a)] > cell.source.stride[static_cast<std::size_t>(b)]; });
  if (cell.modes[static_cast<std::size_t>(box.source_order.front())].extent % kPageStreams != 0) return std::nullopt;
  return box;
}

std::optional<SourceBox> staged_runs(const Cell& cell, int source_bytes, std::size_t first_level) {
  const std::size_t loops = cell.loops.size();
  for (std::size_t level = first_level; level + 2 <= loops; ++level) {
    const int pairs = run_pairs_level(cell, source_bytes, level);
    if (pairs < 0 || static_cast<std::size_t>(pairs) + 2 >= loops) continue;  // no loop between the paired ones
    const auto box = source_box(cell, source_bytes, level);
    if (box && box->target_contiguous && box->bytes <= kMostStagedBytes) return box;
  }
  return std::nullopt;
}

std::int64_t staged_runs_pieces(const Cell& cell, const SourceBox& box) {
  if (box.row_mode >= 0) return 0;
  const std::int64_t quarters = cell.modes[static_cast<std::size_t>(box.source_order.front())].extent / kPageStreams;
  const std::int64_t next = box.source_order.size() > 1 ? cell.modes[static_cast<std::size_t>(box.source_order[1])].extent : 1;
  const std::int64_t pieces = quarters * next;
  if (pieces <= 0 || box.bytes % pieces != 0 || (box.bytes / pieces) % 16 != 0) return 0;
  return pieces;
}

std::optional<SourceBox> staged_runs_into_rows(const Cell& cell, int source_bytes, std::size_t level) {
  if (level >= cell.loops.size() || cell.tile_target_contiguous >= 0 || cell.run_elements * source_bytes >= 64) return std::nullopt;
  const int row = cell.loops[level];
  const Mode& r = cell.modes[static_cast<std::size_t>(row)];
  // The row loop: a fixed extent read by the target's lookups alone, all of them bound at its level.
  if (r.top_of_token || cell.coords[static_cast<std::size_t>(r.coord)].inverse >= 0 || selects_instance(cell, row) ||
      read_by_atoms(cell.source, row) || !read_by_atoms(cell.target, row) || cell.target.stride[static_cast<std::size_t>(row)] != 0)
    return std::nullopt;
  auto position = [&](int m) {  // the loop level binding mode m, or -1 (a constant)
    const auto it = std::find(cell.loops.begin(), cell.loops.end(), m);
    return it == cell.loops.end() ? -1 : static_cast<int>(it - cell.loops.begin());
  };
  for (const Atom& a : cell.target.atoms)
    if (std::find(a.modes.begin(), a.modes.end(), row) != a.modes.end())
      for (int m : a.modes)
        if (position(m) > static_cast<int>(level)) return std::nullopt;  // a lookup also reading an inner loop's mode
  const std::vector<int> modes(cell.loops.begin() + static_cast<std::ptrdiff_t>(level), cell.loops.end());
  const std::vector<int> inner(modes.begin() + 1, modes.end());
  if (!std::all_of(inner.begin(), inner.end(), [&](int m) { return plain(cell, m); }) || !checked_once(cell, modes)) return std::nullopt;
  const std::int64_t elements = contiguous_elements(cell, cell.source, modes);
  const std::int64_t row_elements = contiguous_elements(cell, cell.target, inner);
  if (elements == 0 || row_elements == 0 || row_elements * r.extent != elements) return std::nullopt;
  SourceBox box{level, modes, elements * source_bytes, false, row, row_elements * source_bytes};
  std::sort(box.source_order.begin(), box.source_order.end(),
            [&](int a, int b) { return cell.source.stride[static_cast<std::size_t>(a)] > cell.source.stride[static_cast<std::size_t>(b)]; });
  if (cell.modes[static_cast<std::size_t>(box.source_order.front())].extent % kPageStreams != 0 || box.bytes > kMostStagedBytes || box.row_bytes % 16 != 0)
    return std::nullopt;
  return box;
}

std::optional<PackLines> pack_lines(const Cell& cell, const SourceBox& box, int source_bytes) {
  constexpr std::int64_t kPackBytes = 16, kRows = 16, kStepBytes = 1024, kPacksPerLine = 4;
  if (box.rows_in_source || cell.run_elements * source_bytes != kPackBytes || box.bytes % kStepBytes != 0) return std::nullopt;
  auto source_stride = [&](int m) { return cell.source.stride[static_cast<std::size_t>(m)]; };
  int row = box.row_mode;
  if (row < 0)  // rows a stride apart: the loop continuing the run in the source
    for (int m : box.source_order)
      if (source_stride(m) == cell.run_elements) row = m;
  if (row < 0 || cell.modes[static_cast<std::size_t>(row)].extent != kRows || source_stride(row) != cell.run_elements) return std::nullopt;
  int pack = -1;  // the other loop with the smallest source stride
  for (int m : box.source_order)
    if (m != row && (pack < 0 || source_stride(m) < source_stride(pack))) pack = m;
  if (pack < 0 || source_stride(pack) != kRows * cell.run_elements || cell.target.stride[static_cast<std::size_t>(pack)] != cell.run_elements ||
      cell.modes[static_cast<std::size_t>(pack)].extent % kPacksPerLine != 0)
    return std::nullopt;
  return PackLines{row, pack, box.bytes / kStepBytes};
}

std::optional<SourceBox> pack_lines_box(const Cell& cell, int source_bytes, std::size_t first_level) {
  for (std::size_t level = first_level; level < cell.loops.size(); ++level) {
    const auto box = source_box(cell, source_bytes, level);
    if (box && pack_lines(cell, *box, source_bytes)) return box;
  }
  return std::nullopt;
}

std::optional<SourceBox> staged_runs_from_rows(const Cell& cell, int source_bytes, std::size_t level) {
  if (level >= cell.loops.size() || cell.tile_target_contiguous >= 0 || cell.run_elements * source_bytes >= 64) return std::nullopt;
  const std::vector<int> modes(cell.loops.begin() + static_cast<std::ptrdiff_t>(level), cell.loops.end());
  std::vector<int> others;
  int row = -1;
  for (int m : modes) {
    if (!read_by_atoms(cell.source, m)) others.push_back(m);
    else if (row >= 0) return std::nullopt;  // two loops read through the source's lookups
    else row = m;
  }
  if (row < 0) return std::nullopt;
  const Mode& r = cell.modes[static_cast<std::size_t>(row)];
  if (r.top_of_token || cell.coords[static_cast<std::size_t>(r.coord)].inverse >= 0 || selects_instance(cell, row) || read_by_atoms(cell.target, row) ||
      cell.source.stride[static_cast<std::size_t>(row)] != 0 || r.extent % kPageStreams != 0)
    return std::nullopt;
  for (const Atom& a : cell.source.atoms)  // the row's lookups read no other loop of the box
    if (std::find(a.modes.begin(), a.modes.end(), row) != a.modes.end())
      for (int m : a.modes)
        if (m != row && std::find(modes.begin(), modes.end(), m) != modes.end()) return std::nullopt;
  if (!std::all_of(others.begin(), others.end(), [&](int m) { return plain(cell, m); }) || !checked_once(cell, modes)) return std::nullopt;
  const std::int64_t elements = contiguous_elements(cell, cell.target, modes);
  const std::int64_t row_elements = contiguous_elements(cell, cell.source, others);
  if (elements == 0 || row_elements == 0 || row_elements * r.extent != elements) return std::nullopt;
  std::sort(others.begin(), others.end(),
            [&](int a, int b) { return cell.source.stride[static_cast<std::size_t>(a)] > cell.source.stride[static_cast<std::size_t>(b)]; });
  std::vector<int> order{row};
  order.insert(order.end(), others.begin(), others.end());
  SourceBox box{level, order, elements * source_bytes, true, row, row_elements * source_bytes, true};
  if (box.bytes > kMostStagedBytes || box.row_bytes % 64 != 0) return std::nullopt;
  return box;
}

std::optional<SourceBox> quartered_runs(const Cell& cell, int source_bytes, int target_bytes, std::size_t first_level) {
  if (cell.source_order_from < 0 || cell.run_elements * source_bytes < 64 || source_bytes != target_bytes) return std::nullopt;
  for (std::size_t level = std::max(first_level, static_cast<std::size_t>(cell.source_order_from)); level < cell.loops.size(); ++level) {
    const auto box = source_box(cell, source_bytes, level);
    if (!box || box->bytes < kPageStreams * kPageBytes) continue;
    if (cell.run_elements * source_bytes >= kLeastContinuedRunBytes && continued_in_source(cell, level)) return std::nullopt;
    return box;
  }
  return std::nullopt;
}

}  // namespace kvlayout::emit

#include "move_kind.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "pattern_set.hpp"

namespace kvlayout::bench {

std::string move_kind(const emit::Plan& plan, std::int64_t element_bytes) {
  std::int64_t shortest = INT64_MAX;
  bool transpose = false;
  for (const emit::Cell& c : plan.cells) {
    if (c.tile_target_rows_gathered || c.tile_source_rows_gathered) return kGatheredRowsKind;
    transpose = transpose || c.tile_target_contiguous >= 0;
    shortest = std::min(shortest, c.run_elements * element_bytes);
  }
  if (transpose) return kTransposeKind;
  if (shortest <= element_bytes) return kElementByElementKind;
  if (shortest < 256) return "runs < 256 B";
  if (shortest < 2048) return "runs 256 B .. 2 KiB";
  return "runs >= 2 KiB";
}

namespace {

// Whether `other` stores, on one side of `c`'s tile (its source side where `source`), the same instances of
// the same tensor at an offset at most one tile row away: its rows lie between the tile's (vLLM's packed
// K/V caches, a head's K then its V: the value cell's rows are the 256 bytes after each key row). Not a
// tensor whose K and V are different instances (per layer and kv): their offsets coincide in different
// allocations.
bool lies_between_rows(const emit::Cell& c, const emit::Cell& other, bool source) {
  if (&other == &c) return false;
  const emit::SideForm& side = source ? c.source : c.target;
  const emit::SideForm& o = source ? other.source : other.target;
  const std::int64_t row = source ? c.tile_source_extent : c.tile_target_extent;
  const std::int64_t apart = o.constant > side.constant ? o.constant - side.constant : side.constant - o.constant;
  return o.tensor == side.tensor && o.view == side.view && o.instance_first == side.instance_first && apart <= row;
}

// Whether the rows of `c`'s tile on one side lie interleaved with another cell's on that side.
bool rows_interleaved(const emit::Plan& plan, const emit::Cell& c, bool source) {
  return std::any_of(plan.cells.begin(), plan.cells.end(), [&](const emit::Cell& other) { return lies_between_rows(c, other, source); });
}

// Whether `cell` lies between the gathered rows of a tile (the interleaved row transpose's pattern moves
// those pieces with the tile's rows, as its pair does).
bool carried_by_a_tile(const emit::Plan& plan, const emit::Cell& cell) {
  return std::any_of(plan.cells.begin(), plan.cells.end(), [&](const emit::Cell& tile) {
    return (tile.tile_source_rows_gathered && lies_between_rows(tile, cell, true)) || (tile.tile_target_rows_gathered && lies_between_rows(tile, cell, false));
  });
}

}  // namespace

std::string transpose_turn(const emit::Plan& plan, std::int64_t element_bytes) {
  std::set<std::string> turns;
  for (const emit::Cell& c : plan.cells) {
    if (c.tile_target_contiguous < 0) continue;
    const bool short_source = c.tile_source_extent * element_bytes < 64, short_target = c.tile_target_extent * element_bytes < 64;
    if (short_source != short_target) turns.insert(short_source ? kOutOfTokenFastest : kIntoTokenFastest);
    else if (!short_source && c.tile_source_rows_gathered != c.tile_target_rows_gathered) {
      const bool source = c.tile_source_rows_gathered;
      const char* rows = source ? "source rows gathered" : "target rows gathered";
      turns.insert(std::string(rows_interleaved(plan, c, source) ? kInterleavedTurn : kWholeLinesTurn) + rows);
    }
    else turns.insert("");
  }
  return turns.size() == 1 ? *turns.begin() : "";
}

namespace {

// A cell of 16-byte packs' two token-side loops: the one carrying on contiguously after the run in the
// source and in the target (pack_turn), or {-1, -1} where the cell is not such a cell.
std::pair<int, int> pack_next_modes(const emit::Cell& c, std::int64_t element_bytes) {
  if (c.tile_target_contiguous >= 0 || c.run_elements < 2 || c.run_elements * element_bytes >= 256) return {-1, -1};
  int source_next = -1, target_next = -1;
  for (int m : c.loops) {
    if (c.source.stride[static_cast<std::size_t>(m)] == c.run_elements) source_next = m;
    if (c.target.stride[static_cast<std::size_t>(m)] == c.run_elements) target_next = m;
  }
  if (source_next < 0 || target_next < 0 || source_next == target_next) return {-1, -1};
  return {source_next, target_next};
}

}  // namespace

std::string pack_turn(const emit::Plan& plan, const emit::Cell& c, std::int64_t element_bytes) {
  const auto [source_next, target_next] = pack_next_modes(c, element_bytes);
  if (source_next < 0) return "";
  auto is_token = [&](int m) { return c.modes[static_cast<std::size_t>(m)].coord == plan.token_coord; };
  if (is_token(source_next) == is_token(target_next)) return "";
  return is_token(source_next) ? kOutOfTokenFastest : kIntoTokenFastest;
}

bool pack_rows_one_by_one(const emit::Plan& plan, const emit::Cell& c, std::int64_t element_bytes) {
  const std::string turn = pack_turn(plan, c, element_bytes);
  if (turn.empty()) return false;
  const auto [source_next, target_next] = pack_next_modes(c, element_bytes);
  const bool out = turn == kOutOfTokenFastest;
  return emit::read_by_atoms(out ? c.target : c.source, out ? source_next : target_next);
}

bool is_own_runs_cell(const emit::Plan& plan, const emit::Cell& cell, std::int64_t element_bytes) {
  return cell.tile_target_contiguous < 0 && cell.run_elements >= 2 && pack_turn(plan, cell, element_bytes).empty() && !carried_by_a_tile(plan, cell);
}

std::int64_t shortest_own_run(const emit::Plan& plan, std::int64_t element_bytes) {
  std::int64_t shortest = 0;
  for (const emit::Cell& c : plan.cells)
    if (is_own_runs_cell(plan, c, element_bytes)) shortest = shortest == 0 ? c.run_elements : std::min(shortest, c.run_elements);
  return shortest;
}

std::map<std::string, double> ceiling_shares(const emit::Plan& plan, std::int64_t element_bytes, const std::string& pair_key) {
  std::map<std::string, double> elements;
  double all = 0;
  for (const emit::Cell& c : plan.cells) {
    double e = 1;
    for (const emit::Mode& m : c.modes) e *= static_cast<double>(m.extent);
    all += e;
    const std::string packs = pack_turn(plan, c, element_bytes);
    if (is_own_runs_cell(plan, c, element_bytes)) elements[kOwnRunsKey] += e;
    else if (!packs.empty())
      elements[ceiling_key(pack_rows_one_by_one(plan, c, element_bytes) ? kGatheredPacksKey : kPacksKey, packs)] += e;
    else elements[pair_key] += e;
  }
  for (auto& [key, e] : elements) e = all > 0 ? e / all : 0;
  return elements;
}

}  // namespace kvlayout::bench

#pragma once
// The statements of a cell's loop nest that the CPU and CUDA printers share: at each loop level, what
// becomes known there (bound-checked coordinates, tensor-instance pointers, table lookups) and the
// running element offsets of both sides. Everything is computed at the outermost level where all it reads
// is bound, so lookups sit outside the loops that do not change them.
#include <cstdint>
#include <string>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// How the printed code names its inputs.
struct Inputs {
  std::string src;         // array of source instance pointers (char* const*)
  std::string dst;
  std::string src_tables;  // array of source table pointers (const int32_t* const*)
  std::string dst_tables;
  std::string num_tokens;
};

// Statements for `level` (-1: before the first loop); `skip` leaves the current iteration ("continue;",
// or "return;" before any loop).
std::vector<std::string> level_statements(const Cell& cell, int level, const Inputs& in, const std::string& skip);

// One side's statements of `level` alone, as level_statements prints them (its table lookups, then its
// running offset): for a loop printed apart from the nest (a staged box's target rows, print_box_runs).
// @pre the side's instance pointer is not selected at `level`.
std::vector<std::string> side_statements(const Cell& cell, int level, const Inputs& in, bool source);

// The element offset of a side once every loop is bound.
std::string final_offset(const Cell& cell, bool source);
// The element offset of a side as computed at loop `level` (-1: before the first loop).
std::string offset_at(const Cell& cell, bool source, int level);
// The source / target instance pointer variable.
std::string pointer_name(bool source);
// The statement defining a side's instance pointer, named `name`, with the instance index moved by
// `shift` (a member of a sibling group: sibling_cells.hpp), at the level where the coordinate selecting
// the instance is bound (-1: before the first loop); nothing at other levels.
std::vector<std::string> shifted_pointer(const Cell& cell, int level, const Inputs& in, bool source, std::int64_t shift, const std::string& name);
// The source instance pointer `ahead` instances past shifted_pointer's (the same `shift`), named `name`,
// for a PrefetchStep with next_instance: at its level, where that loop's variable plus `ahead` is still
// below `bound` (the loop's end), else the current instance (the prefetch then reads what is being read).
// @pre step.next_instance and `level` == step.level.
std::vector<std::string> next_instance_pointer(const Cell& cell, int level, const Inputs& in, std::int64_t shift, std::int64_t ahead,
                                               const std::string& bound, const std::string& name);
// The value of coordinate `coord` with mode `without` taken as 0, and the largest value the coordinate may
// take in this cell (the token's: num_tokens - 1), for checking a tile against the bound.
std::string coordinate_base(const Cell& cell, int coord, int without);
std::string coordinate_limit(const Cell& cell, int coord, const Inputs& in);
std::string next_displacement_name();
// The element offset of one gathered row (Cell::tile_*_rows_gathered) of side `source`, once the tile mode
// that places it (the target-contiguous one for source rows, the source-contiguous one for target rows)
// is defined as a variable of its name: its lookups, then `const int64_t name = ...;`.
std::vector<std::string> row_offset(const Cell& cell, bool source, const Inputs& in, const std::string& name);
// The element offset of the row that mode `row` places through side `source`'s lookups (a staged box's
// gathered source rows, print_rows_box), once `row` and every other mode those lookups read are defined:
// `base` plus each lookup reading `row` times its coefficient. Its lookups, then `const int64_t name = ...;`.
std::vector<std::string> lookup_row_offset(const Cell& cell, bool source, int row, const std::string& base, const Inputs& in, const std::string& name);
// True (as C) where the slot of an inverted table (coordinate `coord`, CellCoordinate::inverse) holds no
// moved token, once its modes are defined.
std::string slot_absent(const Cell& cell, int coord, const Inputs& in);
// The bytes of source one iteration of the loop at `level` reads: the extents of every mode not looped at
// or outside it (at full capacity for the token's top digit).
std::int64_t bytes_per_iteration(const Cell& cell, int level, int source_bytes);
// How far ahead a copy prefetches its source: `iterations` iterations of the loop at `level` (-1: none).
// The next block of a paged source is the natural distance (the hardware prefetcher does not follow a
// table), but a block read per iteration of several MiB (TensorRT-LLM's pool holds every layer's K and V
// of 32 tokens in one 4 MiB block) leaves what was prefetched evicted before it is read: there a loop
// inside the block is taken, enough of its iterations ahead to read kNearestPrefetchBytes. Measured on an
// Intel Xeon (2 MiB L2), 256 MiB, 1 / 2 threads: trtllm-pool -> dynamo-universal (4 KiB runs, 64 KiB apart
// in the source) with the next 4 MiB block 0.63x / 1.07x of memcpy, the next run (4 KiB ahead)
// 0.82-0.89x / 1.30-1.36x, two runs (8 KiB) 0.83-0.84x / 1.38-1.43x.
// `next_instance`: the loop at `level` picks the source's tensor instance (a per-layer tensor's layer), so
// the copy prefetches the same offset in the instance `iterations` ahead (next_instance_pointer), not a
// displacement within its own instance.
// `where_cpu_picks`: the prefetch is printed under the per-call CPU choice kv_table_free_prefetches (a
// source no loop looks up, read in tiles or runs shorter than a line: measured slower with it on an Intel
// Xeon, faster on an AMD EPYC of Zen 4; see prefetch_step).
// `on_page_hops`: the prefetch is printed under the per-call CPU choice kv_page_hop_prefetches (a step
// inside a paged source's block, whose loops read a few page-long streams that hop a page at each step:
// StreamWalk::hops; measured faster with it on an AMD EPYC of Zen 4; see prefetch_step).
struct PrefetchStep {
  int level = -1;
  std::int64_t iterations = 1;
  bool next_instance = false;
  bool where_cpu_picks = false;
  bool on_page_hops = false;
};
// The farthest next block prefetched: 256 KiB until the thirty-second session, when a block of 256 KiB
// ahead measured 0.64x of memcpy against 0.85x unprefetched on an Ice Lake-class Xeon (1.25 MiB of L2;
// see prefetch_step); the next token 32 KiB ahead had measured well (sglang-host-page-first ->
// vllm-flash-nhd, above).
constexpr std::int64_t kFarthestPrefetchBytes = std::int64_t{64} << 10;
constexpr std::int64_t kNearestPrefetchBytes = std::int64_t{8} << 10;
// The same for the prefetches the call's CPU picks (PrefetchStep::where_cpu_picks: taken on an AMD EPYC of
// Zen 4 alone, kv_table_free_prefetches in cpu_choices.cpp) along a loop whose iterations lie a page or more apart.
constexpr std::int64_t kNearestPickedPrefetchBytes = std::int64_t{4} << 10;
// The innermost loop whose next iteration moves the source through a table lookup (not one placing single
// elements within a line's reach: llama.cpp's cells in its transposed V), one iteration ahead,
// where an iteration of it reads at most kFarthestPrefetchBytes. Else, of the loops inside that one (every
// loop where none looks up) whose steps move the source by a stride and whose iteration reads at most
// kFarthestPrefetchBytes: the innermost whose iteration reads at least kNearestPrefetchBytes, one
// iteration ahead (only below a lookup); else the innermost taken ceil(kNearestPrefetchBytes / its bytes
// an iteration) iterations ahead where that is at most half its extent. Else the lookup's loop, or none
// (-1). A source
// no loop looks up is prefetched where the cell copies runs of a line or more (no tile), or, where the
// call's CPU picks it (where_cpu_picks), in tiles or runs shorter than a line; not in
// whole blocks (`whole_block_bytes`, cpu.cpp's whole_block) of kNearestPrefetchBytes or more
// (kv_stream_copy reads such a block's pages in several streams itself), and not in 2 to kMostStreams
// page-long read streams at once (streams_along) with runs of a line or more, which the hardware
// prefetcher follows. Where a loop
// inside the one so found (or inside the lookup's, when none is) picks the source's tensor instance by
// itself (a per-layer tensor's layer), the instance ceil(kNearestPrefetchBytes / its bytes an iteration)
// ahead at the same offset instead (next_instance). A lookup's block farther than kFarthestPrefetchBytes
// read inside it in 2 to kMostStreams page-long streams of one tensor instance is not prefetched either,
// nor in one such stream where the target is written in at most kMostStreams, unless those streams hop a
// page at each step (StreamWalk::hops): then the step inside the block, where the call's CPU picks it
// (on_page_hops). Where the call's CPU picks the prefetch of a source no loop looks up, a loop stepping
// the source by a page or more is taken kNearestPickedPrefetchBytes ahead, not kNearestPrefetchBytes.
// @post level is -1 only when no loop's iteration moves the source through a table lookup, or that
//       lookup's block is farther than kFarthestPrefetchBytes and read inside in a few page-long streams of
//       one instance.
// @post on_page_hops only where level lies inside a lookup's block (never the lookup's own level).
// @post where_cpu_picks only where level >= 0, no loop's table lookup gives the step (none looks the source
//       up, or its table places single elements), and the cell copies tiles or runs shorter than a line.
PrefetchStep prefetch_step(const Cell& cell, int source_bytes, std::int64_t whole_block_bytes = 0);
// The step a box printed before loop `box_level` (a straight box of the legacy key block's packs,
// cpu.cpp's print_pack_lines) prefetches by itself where the nest's step (prefetch_step) does not enclose
// it: the next tensor instance's same offset (next_instance, as prefetch_step finds it), where the loop
// picking the instance encloses the box; else none (level -1).
// @post level < box_level, and next_instance, wherever level >= 0.
PrefetchStep box_instance_step(const Cell& cell, int source_bytes, int box_level);
// Where next_displacement carries past the step loop's last iteration into the enclosing loop's next one.
struct Carry {
  std::string outer_bound;    // the enclosing loop's end as printed around the step's; empty: no carry
  bool by_stride = true;      // an enclosing loop that steps the source by a stride alone carries it
  bool by_lookup = true;      // an enclosing loop read by the step's own lookup alone carries it
  std::string lookup_choice;  // the flag of the per-call choice (cpu_choices.hpp) a carry through the
                              // step's own lookup runs under; empty: always
};
// The source displacement `step` prefetches: an expression, 0 where the loop has fewer than
// step.iterations iterations left, or empty when the loop does not move the source. The printed code
// defines it as a variable named by next_displacement_name(). Where `carry` names the enclosing loop's
// end, past the step loop's last iteration the displacement carries into that loop's next iteration (one
// iteration ahead), where that loop moves the source only through the step level's own table lookups (with
// carry.by_lookup: the next block is where the table says; under carry.lookup_choice), or, with
// carry.by_stride, by a stride alone; 0 past its own end or its last moved token.
std::string next_displacement(const Cell& cell, const PrefetchStep& step, const Inputs& in, const std::string& bound, const Carry& carry = {});
// A loop's extent as an expression (the token's top digit depends on num_tokens).
std::string extent(const Cell& cell, int mode, const Inputs& in);

}  // namespace kvlayout::emit

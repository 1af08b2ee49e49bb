#pragma once
// A box of a cell's runs read as four page streams. Where the innermost loops of a cell from some level on
// read one contiguous span of the source (a vLLM block of 16 slots of 8 heads of 128 bf16, behind its
// block-table lookup), a nest that walks the span in order reads one page after another, and one core
// then waits on each page's first lines: the hardware prefetcher does not cross pages. Split into four
// quarters taken a step each in turn, the box is read as four page streams at once, as kv_stream_copy
// reads a run of pages (glibc's memcpy does the same). Two users:
//   - staged_runs: 16-byte runs (vLLM's legacy key cache, a block's x-packs `[head, dim / 8, slot, 8]`)
//     into a contiguous target box (a token-major block `[slot, head, dim]`) are copied into a buffer on
//     the stack in the source's order, with ordinary stores that stay in L1, and the buffer is then
//     streamed to the target as one sequential run. The paired nest (run_pairs.hpp) reads each source
//     line in visits a whole sub-nest apart when a loop lies between its two paired loops: with the pack
//     index innermost and the heads between, a line's four slots come back after every head's packs.
//     Measured on vllm-paged-legacy -> vllm-flash-nhd's key move alone (one process, one thread, 256 MiB,
//     GiB/s over the pair's bytes): paired 12.1-12.3 -> staged 14.5-14.6 (the source read in one stream
//     12.8-13.0). Where no loop lies between the paired ones the buffer lost, so such nests stay paired:
//     into the legacy cache (vllm-flash-nhd -> vllm-paged-legacy's key move 17.7-18.0 -> 14.9-15.6;
//     flashinfer-hnd -> vllm-paged-legacy 7.6-8.2 -> 7.2-7.3 for the pair), and out of it into head-major
//     blocks (vllm-paged-legacy -> trtllm-pool 7.6-7.7 -> 6.3, -> hf-dynamic 7.8-8.1 -> 6.4-6.5). Where a
//     block of heads is 16 KiB or more and the CPU streams boxes straight, those nests take pack lines
//     first (pack_lines_box).
//   - quartered_runs: runs of whole lines in a box the plan walks in the source's order (phase 5b) are
//     streamed straight to the target, the quarters' runs one after another. Measured in one process
//     (256 MiB, 1 / 2 threads, ratio to memcpy): vllm-flash-nhd -> vllm-flash-hnd 0.78-0.86 -> 1.07-1.11 /
//     1.28-1.44 -> 1.69-1.81, flashinfer-nhd -> trtllm-pool 0.86-0.88 -> 1.07-1.09 / 1.39-1.43 -> 1.65-1.81.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "emit/plan.hpp"
#include "emit/sibling_cells.hpp"

namespace kvlayout::emit {

// How many pages one core reads at once where a box is split (kv_stream_copy's streams, measured on the
// Xeon: see its comment in cpu.cpp).
constexpr std::int64_t kPageStreams = 4;

struct SourceBox {
  std::size_t level = 0;          // the box's loops are cell.loops[level..]
  std::vector<int> source_order;  // those loops' modes, largest source stride first
  std::int64_t bytes = 0;         // the box in the source
  bool target_contiguous = false;  // the box is one contiguous span of the target too, of `bytes`
  // A box staged into gathered target rows (staged_runs_into_rows): its outermost loop's mode, which places
  // each of its values' target row through a lookup, and the bytes of one such row; else -1 and 0.
  int row_mode = -1;
  std::int64_t row_bytes = 0;
  // The rows are the source's, placed through its lookups (staged_runs_from_rows), not the target's.
  bool rows_in_source = false;
};

// The box of cell.loops[level..], or nothing: its loops are of fixed extent and place nothing through a
// table, an inverted slot or a tensor instance; with the run they tile one contiguous span of the source
// (strides positive, each the run's length times the smaller ones' extents); the source's outermost loop
// divides into kPageStreams parts; a bound-checked coordinate's digits in the box are its lowest ones (checked
// once for the whole box).
// @post source_order is a permutation of cell.loops[level..].
std::optional<SourceBox> source_box(const Cell& cell, int source_bytes, std::size_t level);

// The largest box from `first_level` on to stage (see above): its runs pair (run_pairs_level) with a loop
// between the paired ones, and it is contiguous in the target too, of at most kMostStagedBytes.
// @pre a move without conversion; source_bytes is the element size.
std::optional<SourceBox> staged_runs(const Cell& cell, int source_bytes, std::size_t first_level);

// The pieces a staged box's buffer is streamed out in while the next box is staged into the other buffer
// (the staged tiles' way, print_copy): one per iteration of the box's two outermost loops (its quarters'
// step and the source's next loop), or 0 where the box does not split into whole 16-byte pieces that way;
// such a box is streamed out at once after staging. Measured on vllm-paged-legacy -> vllm-flash-nhd
// (32 pieces of 1 KiB), 256 MiB, three runs of `--ab-source` in one process each, 1 / 2 threads: 1.06-1.10x
// / 1.03-1.12x of the pair against the box streamed out at once.
// A box staged into gathered target rows (row_mode set) is not split: it is streamed out row by row.
// @post 0, or a divisor of box.bytes whose quotient is a multiple of 16.
std::int64_t staged_runs_pieces(const Cell& cell, const SourceBox& box);

// The box from `level` on to stage into gathered target rows, or nothing: runs shorter than a line
// (vLLM's legacy key cache's 16-byte packs) of a box contiguous in the source (as source_box), whose
// outermost loop places each value's target row through the target's lookups alone (a slot pool's token
// row: SGLang's token pool, llama.cpp's K) and whose other loops, with the run, tile that row contiguously
// (each row a multiple of 16 bytes), of at most kMostStagedBytes. The box's runs are staged in the
// source's order, four quarters at once, the buffer laid out row after row, and each row then streamed out
// whole to where its lookup places it (print_box_runs). Written straight, each 16-byte run went to its row
// as it was read, the source read a pack from each of its 256-byte lines in turn. Measured on an Intel
// Xeon, 256 MiB, two runs of `--ab-source` in one process each, 1 / 2 threads: vllm-paged-legacy ->
// sglang-mha's K alone 1.11-1.12x / 1.11-1.12x staged; the generator's kernels against the ones before,
// -> sglang-mha 1.06-1.09x / 1.05-1.06x, -> llamacpp 1.06-1.07x / 1.07x, -> llamacpp-vtrans (whose V goes
// element by element) 1.03-1.13x / 0.98-1.09x. Where the box's packs make whole lines (pack_lines), a
// straight way of kilobyte steps beats both on an Ice Lake-class Xeon (kv_staged_boxes).
std::optional<SourceBox> staged_runs_into_rows(const Cell& cell, int source_bytes, std::size_t level);

// A box of 16-byte packs that can be written straight, a kilobyte of the source at a time: 16 rows (a loop
// continuing the run in the source, or a row box's row loop), and a pack loop whose consecutive values lie
// 16 runs apart in the source and one run apart in the target, its extent a multiple of 4; a kilobyte of
// the source is then four packs of every row, which kv_pack_lines16 moves as one whole 64-byte line of each.
// vLLM's legacy key block `[head, dim / 8, slot, 8]`: into 16 gathered slot rows (staged_runs_into_rows:
// row_mode), into a token-major block (staged_runs: the rows `row_mode`'s target stride apart), or into a
// head-major one (pack_lines_box: the same, each head its own 16 rows). Where the call's CPU streams boxes
// straight (kv_staged_boxes), the printer takes those steps, the source's pages four at a time, and no
// stage. Measured on an Ice Lake-class Xeon (see kStraightBoxBytes in cpu.cpp).
struct PackLines {
  int row_mode = -1;       // the loop whose 16 values are the rows
  int pack_mode = -1;      // the loop of the packs along a row
  std::int64_t steps = 0;  // the box's kilobytes
};

// The box's pack lines, or nothing.
// @post row_mode and pack_mode are two of box.source_order; steps * 1024 == box.bytes.
std::optional<PackLines> pack_lines(const Cell& cell, const SourceBox& box, int source_bytes);

// For a nest with no staged box: the largest box from `first_level` on whose packs make whole lines
// (pack_lines), contiguous in the source (source_box), or nothing.
std::optional<SourceBox> pack_lines_box(const Cell& cell, int source_bytes, std::size_t first_level);

// The mirror box, from `level` on, to stage out of gathered source rows, or nothing: runs shorter than a
// line into a box contiguous in the target (vLLM's legacy key cache's block of 16-byte packs), one of whose
// loops places each value's source row through the source's lookups alone, reading no other loop of the
// box (a slot pool's token row: SGLang's token pool, llama.cpp's K), its other loops, with the run, tiling
// that row contiguously, the rows a multiple of four, of at most kMostStagedBytes. source_order holds the
// row mode first, then the others, largest source stride first. The rows are read four at a time, each in
// order (the next four prefetched a line at a time), their runs written into a buffer in the target's
// layout, which is then streamed out whole (print_rows_box). Written straight, each 16-byte run was read
// from its row as the target's order came to it, 16 rows in turn. Measured on sglang-mha ->
// vllm-paged-legacy's K alone (256 MiB, two runs of `--ab-source` in one process each, 1 / 2 threads, an
// Intel Xeon): 1.14-1.16x / 1.08-1.19x staged; the generator's kernels against the ones before, the pair,
// two runs each: sglang-mha 1.01-1.03x / 0.97-1.09x, llamacpp 1.02-1.15x / 1.10-1.14x.
std::optional<SourceBox> staged_runs_from_rows(const Cell& cell, int source_bytes, std::size_t level);

// The largest box from `first_level` on to read in quarters (see above): the plan walks it in the
// source's order, its runs are 64 bytes or longer, and it spans four pages or more; none where the loop
// enclosing that box steps on to the source's next box, four boxes or more, and the runs are 1 KiB or
// longer (the walk then reads one sequential span box after box: continued_in_source in source_box.cpp).
// (The printer streams the runs: it takes the box only where every run starts 16-byte aligned in the
// target.)
std::optional<SourceBox> quartered_runs(const Cell& cell, int source_bytes, int target_bytes, std::size_t first_level);

// The largest box staged: the buffer beside the source lines being read stays in a 48 KiB first-level
// cache (measured at 32 KiB only: a vLLM block of 16 slots of 8 heads of 128 bf16).
constexpr std::int64_t kMostStagedBytes = std::int64_t{32} << 10;

}  // namespace kvlayout::emit

#pragma once
// 16-bit elements moved into and out of single-element slots, staged through slot rows. llama.cpp's
// transposed V holds a row of `kv_size` cells per layer, head and dim, each token's element at its cell
// (`cells[token]`); vLLM's legacy value cache holds 16 tokens fastest in each block (`[block, head, dim,
// 16]`). Between the two nothing is contiguous on both sides, though the token is contiguous on each
// side's own terms, so the move went element by element: 0.14-0.17x of memcpy into the cells, 0.20-0.23x
// out of them (256 MiB, an Intel Xeon).
//
// Where every token is moved, the move goes through a buffer of slot rows, one per cell, each holding a
// group of G dims (G = 32 or 16), per flattened iteration (a layer's head) and group:
//   - into the cells: each block's G dims x 16 tokens are transposed in registers into its tokens' slot
//     rows (G x 2 bytes each, placed by the table); the buffer, now [cell][G dims], is then transposed in
//     32 x G blocks into the G target rows, each written in order, whole lines streamed. Every cell must
//     be written once, or a cell would get the buffer's stale bytes: the call moves every token, and the
//     entry checks make the cells table injective into exactly as many cells (a permutation);
//   - out of the cells: the G source rows are transposed, 32 cells at a time, into the slot rows (every
//     cell's, read whether a token holds it or not: all lie inside the source's rows), and each block's
//     16 tokens' slot rows then into its G dims x 16 tokens, streamed.
// Both halves are the gathered-row transposes the kernels already carry (kv_transpose_row_groups,
// kv_transpose_rows_block). The buffer is cells x G x 2 bytes (128 KiB for 2048 cells), kept in the
// second-level cache.
//
// Measured on an Intel Xeon (256 MiB, `kvlayout_bench_sweep --ab-source`, one process each, 1 / 2
// threads), into the cells (vllm-paged-legacy -> llamacpp-vtrans): 0.13-0.17x / 0.12-0.16x of memcpy
// element by element -> 0.51-0.56x / 0.50-0.57x staged by groups of 32 dims with the next block's group
// prefetched (a hand edit); 0.47x / 0.42-0.46x without that prefetch; the four groups at once (a 512 KiB
// buffer, each block read once) 0.50-0.56x / 0.54x. The generated kernels against the ones before, in one
// process: into the cells 0.50x / 0.53x against 0.15x / 0.15x; out of them 0.60x / 0.58x against 0.22x /
// 0.23x.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "emit/code_writer.hpp"
#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::emit {

struct SlotStage {
  std::size_t level = 0;  // the dim loop's level: cell.loops[level .. level + 2] are dim, block, lane
  int dim = -1, block = -1, lane = -1;
  std::int64_t group = 0;  // dims per slot row: 32 or 16
  std::int64_t cells = 0;  // the table's cells, each token's one (= the plan's capacity)
  bool into_cells = true;  // the target holds the cells (else the source: the mirror move, out of them)
};

// The largest buffer of slot rows staged (cells x group x 2 bytes): well inside a 2 MiB second-level cache
// beside the source block being read.
constexpr std::int64_t kMostSlotStageBytes = std::int64_t{1} << 20;

// The slot stage of a cell, or nothing. The cell moves 16-bit elements one at a time without conversion,
// as one nest member. One side (the cells') places the token through exactly one lookup: a table read at
// the token itself, with coefficient 1, whose entries lie in [0, capacity) (so that, injective over every
// token, it is a permutation of the cells), the capacity a multiple of 32; the other side (the blocks')
// holds each block's dims x lanes as one contiguous box. The cell's three innermost loops (right after the
// `flat` flattened ones) are:
//   - dim: a plain counter (no lookup, instance or bound check) whose stride on the blocks' side is the
//     lane's extent and whose extent divides into groups of 32 or 16;
//   - block, lane: the token's two digits, lane the lowest (stride 1 on the blocks' side, extent 16 or
//     32), together spanning every token up to the capacity; the blocks' side places the block through its
//     own lookups (which read neither lane nor dim), the cells' side places both through its one lookup;
// and the buffer is at most kMostSlotStageBytes.
// @post where returned, the printer's runtime condition (every token moved) makes each cell written once.
std::optional<SlotStage> slot_stage(const Cell& cell, const Plan& plan, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                    int source_bytes, int target_bytes, bool convert, std::size_t flat, std::size_t members);

// The staged move, printed inside the flattened loop after its statements: where every token is moved
// (SSE2 and up), the slot rows are filled and written out and the iteration ends; otherwise the nest goes
// on element by element. `statements(level)` prints the nest's statements of that level (lookups and
// running offsets, leaving the iteration where a bound check fails). The cell declares kv_slot_buffer,
// kv_block_at and kv_slot_at before its loops (print_slot_stage_buffers).
void print_slot_stage_buffers(CodeWriter& w, const SlotStage& stage);
void print_slot_stage(CodeWriter& w, const Cell& cell, const SlotStage& stage, const std::function<void(int)>& statements);

}  // namespace kvlayout::emit

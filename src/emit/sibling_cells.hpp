#pragma once
// Cells that one loop nest moves together. A source that interleaves K and V per head (vLLM 0.33's
// packed pages: C holds a head's K then its V) gives a cell for K and a cell for V whose loop nests are
// the same but for constants (where each side's data starts, which tensor instance it is in). Printed
// apart, each nest reads every other 256 bytes of the same pages, and the pages twice; printed as one nest
// that copies both runs per iteration, the source is read once, in order (measured on vllm033-lbnhc ->
// sglang-mha, one thread, in one process: 3.1 -> 6.7 GiB/s). Only the CPU printer groups cells; the plan keeps them apart
// (the checkers and the CUDA printer read cells one by one).
#include <cstdint>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// A group member, placed against the group's first member (whose nest is printed).
struct Sibling {
  int cell = 0;                          // index in Plan::cells
  std::int64_t source_shift = 0;         // element offset added to the first member's, per side
  std::int64_t target_shift = 0;
  std::int64_t source_instance_shift = 0;  // index added to the first member's instance pointer, per side
  std::int64_t target_instance_shift = 0;
};

// Whether a cell copies runs: no tile, no gathered rows.
bool plain_runs(const Cell& c);

// Whether b moves in a's loop nest: neither is a tile; both have the same modes (the same inverted table, if any),
// loops, run and source order; each side has the same strides, table lookups and instance coordinate in
// both; their coordinate ranges are equal, or of equal length on a coordinate that is not bound-checked,
// selects no instance and feeds no lookup (so the difference is a constant offset on each side).
bool same_nest(const Cell& a, const Cell& b);

// Whether one side's runs of cell b lie within a 4 KiB page of cell a's (`a` and `b` that side's forms),
// in the same tensor instance (K and V of one head in one page): by the constants, which is where two
// cells of one nest shape differ.
bool within_a_page(const SideForm& a, const SideForm& b, int element_bytes);

// The elements `cell`'s source holds in one span around each run: the run, times the extent of each loop
// from the innermost out while that loop steps the source by the span so far, by its stride alone (no
// table, no other instance). FlashInfer's HND page holds the K of its 8 heads' 16 token rows in one span
// of 16384 elements, the V in the next.
// @post a multiple of cell.run_elements.
std::int64_t source_span_elements(const Cell& cell);

// Whether same_nest cell b's source spans start where cell a's end, or end where a's start, in the same
// source tensor instance: one nest then reads each block of the source (K and V of its heads) in one
// visit, where two nests would read every block twice, half each time (Dynamo's universal blocks,
// FlashInfer's and TensorRT-LLM's pages into HF's per-layer K and V).
bool source_spans_abut(const Cell& a, const Cell& b);

// The cells partitioned into groups of same_nest cells, each ordered by where it reads (its source
// constant, then its index), shifts taken against its first member; groups in the order of their
// lowest cell index. Cells join a group only where their runs interleave with its lowest cell's on one
// side: the same tensor instance, constants less than a 4 KiB page apart (K and V of one head in one
// page). Cells in tensors of their own stay apart: one nest then keeps two read and two write streams
// going at once, which measured slower than two passes (hf-dynamic -> sglang-mha, one thread: 6.2-6.5
// GiB/s apart, 2.5-2.9 as one nest; sglang-mha -> vllm033-lbnhc, whose target interleaves K and V:
// 2.6-3.0 apart, 3.7-4.2 as one). They join too where their source spans abut (source_spans_abut), even
// into target tensors of their own. Measured on an AMD EPYC (Zen 4; 2026-12-07, kvlayout_bench_sweep
// with both groupings in one kernel, switched per call, 256 MiB, two processes of 5 interleaved
// repetitions, 1 / 2 threads) over the 15 distinct kernels this joins: dynamo-universal -> hf-dynamic
// 1.81-1.95x / 1.47-1.49x as fast as one nest (0.53x -> 1.03x of memcpy at one thread); flashinfer-hnd,
// flashinfer-nhd and trtllm-pool -> hf-dynamic 1.11-1.15x / 1.02-1.18x; LMCache's objects (K and V
// halves) into HF, SGLang and llama.cpp 1.01-1.10x / 0.95-1.07x; flashinfer-nhd -> sglang-mha,
// sglang0523-mha and llamacpp 1.00-1.06x / 0.96-1.02x. Abutting target spans from source tensors of
// their own stay apart: joined, hf-dynamic -> lmcache-2ltd, lmcache056-2td and flashinfer-nhd measured
// 0.77-0.90x / 0.89-0.96x (only -> dynamo-universal gained, 1.06-1.25x / 1.05-1.13x). Not measured on
// Intel CPUs. A member whose target shift is not a multiple of 16 bytes stays
// alone, so every member's runs are as aligned as the first's (streaming stores are chosen once per nest).
// @post every cell index appears in exactly one group; a group's first member has all shifts 0.
std::vector<std::vector<Sibling>> sibling_groups(const Plan& plan, int source_bytes, int target_bytes);

}  // namespace kvlayout::emit

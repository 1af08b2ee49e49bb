#pragma once
// 16-byte runs moved two by two (or four by four: run_group_side) along two loops. Where a cell's run is
// 16 bytes (vLLM's legacy key cache holds a head's dims in x-packs of 8 bf16, `[block, head, dim / 8, slot,
// 8]`), the loop that continues the
// run in the target is innermost and another loop continues it in the source, two runs of the outer loop
// are one 32-byte load and two of the innermost one 32-byte store: four runs become a 2 x 2 transpose of
// 16-byte elements (the CPU printer's kv_run_pairs16), half the loads and stores of one run at a time.
// Measured on vllm-paged-legacy -> vllm-flash-nhd's key move alone (one thread, 256 MiB, ratio over the
// pair's bytes): 0.86-1.06x -> 1.18-1.37x of memcpy.
#include <cstddef>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// The level (index in cell.loops, at least `first_level`: the printer's loops from there on are its own)
// of the loop that pairs with the innermost one, or -1. Both loops have an even, fixed extent and place
// nothing through a table, an inverted slot or a tensor instance; the innermost one's target stride and
// the paired one's source stride are the run. A bound-checked coordinate with a digit in either loop has
// its other digits bound outside the paired loop, and not a digit in both, so the printer checks the
// whole range of both once, before the paired loop, and takes the pairs only where all of it is moved.
// The nearest such loop to the innermost one is chosen.
// @pre a move without conversion (both sides' elements are the same bytes); source_bytes is their size.
// @post -1 (always for a tile), or first_level <= level < cell.loops.size() - 1.
int run_pairs_level(const Cell& cell, int source_bytes, std::size_t first_level);

// How many runs of each of the two loops one step moves: 4 where both loops' extents divide by 4 and the
// source holds the runs packed (the innermost loop steps over the paired loop's whole span of runs: out of
// the legacy key cache), else 2. Four by four is four 64-byte source lines in, four target lines out (the
// CPU printer's kv_run_quads16): each line whole on both sides, where two by two reads and writes half
// lines and comes back for the other halves a whole sub-nest later. Measured in one process each, 256 MiB,
// 1 / 2 threads, against two by two: vllm-paged-legacy -> sglang-host-page-first (target rows 64 KiB apart)
// 0.46x / 0.76x of memcpy -> 0.60x / 0.98x, -> sglang-host-page-head 0.56 / 0.92 -> 0.59 / 0.96, ->
// vllm-packed-nhd 0.61 / 0.98 -> 0.64 / 1.04, -> trtllm-pool 0.70 / 1.16 -> 0.74 / 1.21; of the 33 pairs out of
// the legacy cache none lost more than noise (hf-dynamic 0.76 / 1.23 -> 0.73 / 1.15 the most). Into it,
// from sources whose slot rows are one head's 256 bytes (so the source holds the packs' span together too)
// it gained a little: hf-dynamic 0.69 -> 0.72, vllm-flash-hnd 0.76 -> 0.78, trtllm-pool 0.74 -> 0.76, but
// dynamo-universal 0.68 -> 0.65. From sources whose slot rows hold every head it was mixed, and those stay
// two by two: flashinfer-nhd 0.81 / 1.30 -> 0.71 / 1.12, vllm-packed-nhd 0.92 -> 0.82, against
// sglang-host-layer-first 0.81 -> 0.88.
// @pre level = run_pairs_level(cell, ...) >= 0.
// @post 2 or 4; both loops' extents are multiples of it.
int run_group_side(const Cell& cell, int level);

// Whether the printer nests the two paired loops the other way round: the innermost loop (which continues
// the runs in the target) outside the paired one (which continues them in the source), so that one group
// after another reads the next line of the same four source rows, and each group's four target lines lie
// a target row apart, instead of the groups writing the target's lines in address order and reading the
// source's four rows apart. Four by four with nothing nested between the two loops. Measured on the AMD
// EPYC (Zen 3, KVM), 256 MiB, 1 / 2 threads, `kvlayout_bench_sweep --ab` (both orders in one kernel,
// interleaved in the same repetitions; 2026-12-04, twentieth session), the 15 four-by-four kernels into or
// out of vllm-paged-legacy: 0.97-1.21x as fast in source order at one thread (median 1.08x), 0.97-1.10x
// at two (median 1.04x; the untouched kernels read 0.97-1.03x), e.g. vllm-flash-hnd -> vllm-paged-legacy
// 0.57x / 0.73x of memcpy -> 0.67x / 0.79x, flashinfer-hnd -> 0.59 / 0.77 -> 0.66 / 0.80,
// vllm-paged-legacy -> trtllm-pool 0.62 / 0.77 -> 0.75 / 0.85. Two by two (the sources whose slot rows
// hold every head) ran 2.1-3.2x slower (vllm-flash-nhd -> vllm-paged-legacy 0.64 -> 0.23), so those keep
// the target's order. Not measured apart on an Intel CPU (quads_where_cpu_picks' nests were measured
// there with it, as a whole).
// `side` is the nest's: run_group_side's, or 4 for quads_where_cpu_picks' nest.
// @pre level = run_pairs_level(cell, ...) >= 0; side 2 or 4, both loops' extents multiples of it.
bool pairs_in_source_order(const Cell& cell, int level, int side);

// Whether paired runs that go two by two (run_group_side: the source does not hold them packed) have a
// four-by-four nest too, which the printer takes where the call's CPU picks it (kv_run_quads: not on AMD
// CPUs; KVLAYOUT_RUN_QUADS=on / off forces it): both loops' extents divide by 4. The AMD measurement above
// (the sources whose slot rows hold every head mixed) keeps two by two there. Measured on an Ice Lake-class
// Xeon (2026-12-07, `kvlayout_bench_sweep --ab-source`, the kernels four by four against two by two, 256 MiB,
// one process of 5 interleaved repetitions each, 1 / 2 threads): all 18 such kernels into vllm-paged-legacy
// faster, 1.09-1.25x / 1.06-1.41x as fast (median 1.18x / 1.18x): the K and V interleaved head-major
// sources, whose slot rows are a head's 512 bytes, vllm033-lhbnc 0.48x / 0.47x of memcpy -> 0.59x / 0.55x,
// vllm-packed-hnd 0.48 / 0.49 -> 0.60 / 0.59, vllm033-bhlnc 0.55 / 0.60 -> 0.69 / 0.69; those whose rows
// hold every head, vllm-flash-nhd 0.60 / 0.54 -> 0.71 / 0.64, flashinfer-nhd 0.56 / 0.51 -> 0.64 / 0.64,
// lmcache056-t2d 0.75 / 0.70 -> 0.91 / 0.86; sglang-host-page-first's 64 KiB apart 0.62 / 0.62 -> 0.76 / 0.75.
// Generated, the same 18 against KVLAYOUT_RUN_QUADS=off (`--ab`, one process of 5 interleaved repetitions)
// 1.05-1.44x / 0.92-1.49x as fast (median 1.19x / 1.19x); the 9 other kernels into the legacy cache, which
// have no such nest, 0.96-1.06x / 0.96-1.16x (the noise of the run).
// @pre level = run_pairs_level(cell, ...) >= 0.
bool quads_where_cpu_picks(const Cell& cell, int level);

}  // namespace kvlayout::emit

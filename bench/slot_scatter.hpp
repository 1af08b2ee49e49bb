#pragma once
// The element scatter staged through slot rows: the bandwidth of the way the kernels now move vLLM's legacy
// token-fastest value cache into and out of llama.cpp's transposed one where every cell is moved (emit's
// slot stage, src/emit/slot_stage.hpp), by a bare loop of the same two halves with no index arithmetic
// past the pages' and the cells'. The legacy side is pages of [1024 channels][16 tokens] (32 KiB, placed
// by a random block table per layer), the cells side a layer's [1024 channels][2048 cells] (4 MiB), token t
// in cell cells[t]. Per group of 32 channels, into the cells: each page's 32 x 16 box (1 KiB, contiguous)
// is transposed into its 16 tokens' slot rows ([cell][32 channels], 64 bytes each, 128 KiB in all), the
// next page's box prefetched; then the slot rows, 32 cells at a time, into the group's 32 channel rows,
// each receiving a streamed 64-byte line. Out of the cells, the same halves the other way round. The
// element scatter (element_scatter.hpp) times the one-element-at-a-time move; the sweep holds its
// element-by-element pairs against the best of the four (pattern_set.hpp). Like the other patterns, the
// best bare code at hand, not a proof of a ceiling.
//
// Measured on an Intel Xeon (kvlayout_bench_sweep's phase 0, 256 MiB, 1 / 2 threads): into the cells
// 0.41-0.48x / 0.40-0.47x of memcpy, out of them 0.59-0.62x / 0.59-0.64x. Each half alone (the other
// skipped, a hand edit) into the cells: 0.85-0.92x filling the slot rows, 0.88-0.92x writing them out: the
// halves' times add, each about as long as memcpy's reads and writes together. Interleaving them (two sets
// of slot rows, one unit's 64 write steps between the next unit's 64 read steps) was no faster: 0.45x /
// 0.47x into the cells, 0.57x / 0.59-0.61x out of them, so the plain order is kept. The kernels' value
// halves alone (their key cells skipped, `--ab-source`) move at 0.43x / 0.43x into the cells and 0.57x /
// 0.52x out of them, at this pattern.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "element_scatter.hpp"
#include "row_transpose.hpp"

namespace kvlayout::bench {

// Layer l (of `paged_order.size() / kPagesPerLayer`) moves between the channel rows at
// l x kChannelRowsLayerBytes of the cells side and the pages paged_order[l x kPagesPerLayer + k] (tokens
// 16 k .. 16 k + 15) of the legacy side; `direction` IntoSlots moves the pages into the cells, OutOfSlots
// the cells into the pages. The layers are split evenly across `threads`. AVX2 where the CPU has it,
// element by element otherwise.
// @pre to and from 64-byte aligned; paged_order's size a multiple of kPagesPerLayer, its entries in range;
// cells a permutation of 0 .. kContextTokens - 1.
void scatter_through_slot_rows(char* to, const char* from, const std::vector<std::uint32_t>& paged_order, const std::vector<std::uint32_t>& cells,
                               ScatterDirection direction, int threads);

}  // namespace kvlayout::bench

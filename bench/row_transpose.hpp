#pragma once
// The gathered-row transposing pattern's own bandwidth: llama.cpp's transposed value cache (a layer's V as
// [head x dim channels][context tokens], rows of 4 KiB at 2048 tokens) moved from or into a paged
// token-major cache (pages of 16 tokens x 1024 channels, 32 KiB, placed by a random block table), by a bare
// loop: no index arithmetic past the rows', streaming stores. The sweep's 74 transposes of llama.cpp's V
// are this move with each source's own lookups (kvlayout_bench_sweep measures it beside memcpy and holds
// them against it: RooflineTally in relayout_sweep.cpp). Like the block transpose (block_transpose.hpp),
// it is the best bare code at hand, not a proof of a ceiling.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlayout::bench {

// llama-3.1-8b's V per layer at 2048 tokens: 8 heads x 128 dims of 2-byte elements per token.
constexpr std::size_t kContextTokens = 2048, kChannels = 1024, kPageTokens = 16;
constexpr std::size_t kPageBytes = kPageTokens * kChannels * 2;                // 32 KiB
constexpr std::size_t kChannelRowsLayerBytes = kChannels * kContextTokens * 2;  // 4 MiB
constexpr std::size_t kPagesPerLayer = kContextTokens / kPageTokens;

enum class RowTransposeDirection {
  IntoChannelRows,  // the paged token rows (gathered) into [1024 channels][2048 tokens]
  OutOfChannelRows, // [1024 channels][2048 tokens] into the paged token rows
};

// How the paged side holds a token. ValueRows: its V row alone, 1024 channels (2 KiB), a page of 16
// tokens 32 KiB (kPageBytes). KeyValueInterleaved: its K and V head by head, [8 heads][K 128 dims | V 128
// dims] (4 KiB), a page 64 KiB (kInterleavedPageBytes), as vLLM's packed K/V caches and LMCache's packed
// objects hold them; the move then carries the K too, each token's eight 256-byte K pieces to or from a
// 2 KiB K row at its cell, read or written in the same pass as its V. Read alone, the V pieces (half of
// each 512 bytes) cost about what the whole rows do, likely because the hardware prefetchers fetch the K
// lines beside them: measured on an Intel Xeon by a hand-written loop not kept here, 1 thread, the V alone
// 0.49-0.50x of memcpy of its bytes against 0.63x from dense rows, V and K together 0.65x of theirs.
enum class PagedRows { ValueRows, KeyValueInterleaved };
constexpr std::size_t kInterleavedPageBytes = 2 * kPageBytes;
// A layer's share of the channel side with KeyValueInterleaved: its 1024 channel rows (4 MiB), then its
// 2048 K rows by cell (4 MiB). The paged side's layer is as large (128 pages of 64 KiB).
constexpr std::size_t kInterleavedLayerBytes = 2 * kChannelRowsLayerBytes;

// How the 32 x 32 blocks' lines are written. Straight: as the kernels do now (emit/cpu.cpp's
// print_gathered_tile), each target row receiving one 64-byte line per block, streamed; into channel rows
// 32 token rows at a time read whole, the next 32 prefetched a line at a time, out of them 32 channel rows
// at a time over all the tokens. Staged: bands of 256 rows on the side read, each band's blocks transposed
// into a 16 KiB stage in the first-level cache and each of the 32 target rows then written one 512-byte
// burst. Which is better depends on the CPU (bench/README.md). StraightAvx512: straight, each 32 x 32 block
// in AVX-512 registers (the kernels' kv_transpose_rows32_avx512, taken where the CPU has AVX-512 F and BW);
// only where the CPU has them (cpu_has_avx512bw).
enum class RowTransposeWay { Straight, Staged, StraightAvx512 };

// Whether this CPU runs RowTransposeWay::StraightAvx512 (AVX-512 F and BW).
bool cpu_has_avx512bw();

// Layer l (of `paged_order.size() / kPagesPerLayer`) moves between the channel rows at
// l x kChannelRowsLayerBytes of its side (l x kInterleavedLayerBytes, its K rows after them, with
// KeyValueInterleaved) and the pages paged_order[l x kPagesPerLayer + k] (its tokens 16 k .. 16 k + 15; page
// p at p x kPageBytes, or p x kInterleavedPageBytes) of the paged side; token t sits in cell cells[t] of the channel rows (llama.cpp's
// cells: the sweep's table is a random permutation, so the paged rows are gathered in a random order, as
// the kernels gather them). `to` is the channel rows or the pages by `direction`. The layers are split
// evenly across `threads`. AVX2 where the CPU has it, element by element otherwise.
// @pre way is StraightAvx512 only where cpu_has_avx512bw(), and not Staged with KeyValueInterleaved; to and from 64-byte aligned; paged_order's size a multiple of kPagesPerLayer, its entries in range;
// cells a permutation of 0 .. kContextTokens - 1.
void transpose_rows(char* to, const char* from, const std::vector<std::uint32_t>& paged_order, const std::vector<std::uint32_t>& cells,
                    RowTransposeDirection direction, int threads, RowTransposeWay way, PagedRows paged_rows = PagedRows::ValueRows);

}  // namespace kvlayout::bench

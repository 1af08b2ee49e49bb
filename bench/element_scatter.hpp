#pragma once
// The element-by-element pattern's own bandwidth: rows of 2-byte elements whose elements each land in a
// slot a permutation chose (llama.cpp's transposed value cache, where each dim's row holds one element per
// cell and a token's cell is its own: vLLM's legacy token-fastest value cache moves into and out of it
// element by element). A bare loop builds each target row in a buffer of its own, element by element,
// and streams it out whole (no read-for-ownership of the target's lines), rows in order on both sides,
// no tables but the permutation. kvlayout_bench_sweep measures it beside memcpy and holds the sweep's
// element-by-element moves against it (as the tile transposes against block_transpose.hpp). Measured by
// hand on an Intel Xeon, one thread, a layer's value move alone: the kernels' order (scattered stores into
// the target row in place) 1.3-1.7 GiB/s, this 2.8.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlayout::bench {

// A row: one dim's 2048 cells (llama-3.1-8b at the sweep's 2048 tokens a layer), 2-byte elements (4 KiB).
constexpr std::size_t kScatterRowElements = 2048;
constexpr std::size_t kScatterRowBytes = kScatterRowElements * 2;

enum class ScatterDirection {
  IntoSlots,   // target row element slots[t] = source row element t
  OutOfSlots,  // target row element t = source row element slots[t]
};

// Every row of `rows` moves the same way, the rows split evenly across `threads`.
// @pre from and to 64-byte aligned, `rows` rows each; slots a permutation of [0, kScatterRowElements).
void scatter_rows(char* to, const char* from, std::size_t rows, const std::vector<std::uint32_t>& slots, ScatterDirection direction, int threads);

}  // namespace kvlayout::bench

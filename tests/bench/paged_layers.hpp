#pragma once
// The fixture of the patterns over llama.cpp's transposed V (bench/row_transpose.hpp, bench/slot_scatter.hpp):
// `layers` layers of channel rows and of pages, the pages in a random block order, the tokens in random
// cells. Each test states where an element lies on the paged side (token-major or token-fastest pages).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "bench/row_transpose.hpp"

namespace kvlayout::test {

constexpr std::size_t kLayerElements = bench::kChannelRowsLayerBytes / 2;

// The first 64-byte aligned element of v.
inline std::uint16_t* line_aligned(std::vector<std::uint16_t>& v) {
  const auto at = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (64 - at % 64) % 64 / 2;
}

struct PagedLayers {
  std::vector<std::uint16_t> channels, paged;  // each `layers` layers, plus room for 64-byte alignment
  std::vector<std::uint32_t> paged_order;
  std::vector<std::uint32_t> cells;  // token t in cell cells[t]
  std::size_t layers() const { return paged_order.size() / bench::kPagesPerLayer; }
  std::uint16_t* channel_rows() { return line_aligned(channels); }
  std::uint16_t* pages() { return line_aligned(paged); }
  // Random elements on the side a move reads (the pages, or the channel rows), zeros on the other.
  void fill(bool from_pages, unsigned seed) {
    std::mt19937 rng(seed);
    std::uint16_t* from = from_pages ? pages() : channel_rows();
    for (std::size_t e = 0; e < layers() * kLayerElements; ++e) from[e] = static_cast<std::uint16_t>(rng());
    std::fill_n(from_pages ? channel_rows() : pages(), layers() * kLayerElements, std::uint16_t{0});
  }
  // The elements out of place: channel c of token t of layer l belongs at [l][c][cells[t]] on the channel-row
  // side and at element in_page(t % 16, c) of page paged_order[l x 128 + t / 16] on the paged side.
  template <class InPage>
  std::size_t wrong_elements(InPage in_page) {
    const std::uint16_t* rows = channel_rows();
    std::size_t wrong = 0;
    for (std::size_t l = 0; l < layers(); ++l)
      for (std::size_t t = 0; t < bench::kContextTokens; ++t) {
        const std::uint16_t* page = pages() + std::size_t{paged_order[l * bench::kPagesPerLayer + t / bench::kPageTokens]} * (bench::kPageBytes / 2);
        for (std::size_t c = 0; c < bench::kChannels; ++c)
          wrong += rows[l * kLayerElements + c * bench::kContextTokens + cells[t]] != page[in_page(t % bench::kPageTokens, c)];
      }
    return wrong;
  }
};

inline PagedLayers random_paged_layers(std::size_t layers, unsigned seed) {
  std::mt19937 rng(seed);
  PagedLayers b;
  b.channels.resize(layers * kLayerElements + 32);
  b.paged.resize(layers * kLayerElements + 32);
  b.paged_order.resize(layers * bench::kPagesPerLayer);
  std::iota(b.paged_order.begin(), b.paged_order.end(), 0u);
  std::shuffle(b.paged_order.begin(), b.paged_order.end(), rng);
  b.cells.resize(bench::kContextTokens);
  std::iota(b.cells.begin(), b.cells.end(), 0u);
  std::shuffle(b.cells.begin(), b.cells.end(), rng);
  return b;
}

// The controls of a pattern's check: `wrong(b)` counts the elements of b out of place, `move(b, cells)`
// moves b's pages into its channel rows placing token t in cells[t]. A layer copied without moving, and
// one moved with the tokens in cells in order, must both be caught; the same move by the layer's own
// cells must not.
template <class Wrong, class Move>
void check_controls(Wrong wrong, Move move) {
  PagedLayers b = random_paged_layers(1, 3);
  b.fill(true, 11);
  std::memcpy(b.channel_rows(), b.pages(), bench::kChannelRowsLayerBytes);
  CHECK(wrong(b) > 0);
  std::vector<std::uint32_t> in_order(bench::kContextTokens);
  std::iota(in_order.begin(), in_order.end(), 0u);
  move(b, in_order);
  CHECK(wrong(b) > 0);
  move(b, b.cells);
  CHECK(wrong(b) == 0);
}

}  // namespace kvlayout::test

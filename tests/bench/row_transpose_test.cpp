// The sweep's gathered-row transposing pattern (bench/row_transpose.hpp): every element of llama.cpp's
// transposed V lands where the definition says, both ways, straight and staged, at one and two threads,
// checked element by element; the control shows the check tells the channel rows copied untransposed.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <random>

#include "bench/row_transpose.hpp"

using namespace kvlayout;

namespace {

constexpr std::size_t kLayerElements = bench::kChannelRowsLayerBytes / 2;

struct Buffers {
  std::vector<std::uint16_t> channels, paged;  // each `layers` layers, plus room for 64-byte alignment
  std::vector<std::uint32_t> paged_order;
  std::vector<std::uint32_t> cells;  // token t in cell cells[t]
};

Buffers random_layers(std::size_t layers, unsigned seed) {
  std::mt19937 rng(seed);
  Buffers b;
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

std::uint16_t* line_aligned(std::vector<std::uint16_t>& v) {
  const auto at = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (64 - at % 64) % 64 / 2;
}

// The definition: channel c of token t of layer l sits at [l][c][cells[t]] on the channel-row side and at element
// (t % 16) x 1024 + c of page paged_order[l x 128 + t / 16] on the paged side. Counts the elements that differ.
std::size_t wrong_elements(const std::uint16_t* channels, const std::uint16_t* paged, const Buffers& b) {
  std::size_t wrong = 0;
  const std::size_t page_elements = bench::kPageBytes / 2;
  for (std::size_t l = 0; l < b.paged_order.size() / bench::kPagesPerLayer; ++l)
    for (std::size_t t = 0; t < bench::kContextTokens; ++t) {
      const std::uint16_t* row = paged + std::size_t{b.paged_order[l * bench::kPagesPerLayer + t / bench::kPageTokens]} * page_elements +
                                 (t % bench::kPageTokens) * bench::kChannels;
      for (std::size_t c = 0; c < bench::kChannels; ++c) wrong += channels[l * kLayerElements + c * bench::kContextTokens + b.cells[t]] != row[c];
    }
  return wrong;
}

}  // namespace

TEST_CASE("row transpose: every element of llama.cpp's transposed V lands where the definition says, both ways, straight and staged, one and two threads",
          "[bench][transpose]") {
  for (auto direction : {bench::RowTransposeDirection::IntoChannelRows, bench::RowTransposeDirection::OutOfChannelRows})
    for (auto way : {bench::RowTransposeWay::Straight, bench::RowTransposeWay::Staged})
      for (int threads : {1, 2}) {
        const bool into = direction == bench::RowTransposeDirection::IntoChannelRows;
        INFO((into ? "into" : "out of") << " channel rows, " << (way == bench::RowTransposeWay::Staged ? "staged" : "straight") << ", " << threads
                                        << " threads");
        Buffers b = random_layers(2, static_cast<unsigned>(threads) * 31u + into);
        std::uint16_t* channels = line_aligned(b.channels);
        std::uint16_t* paged = line_aligned(b.paged);
        std::mt19937 rng(7);
        std::uint16_t* from = into ? paged : channels;
        for (std::size_t e = 0; e < 2 * kLayerElements; ++e) from[e] = static_cast<std::uint16_t>(rng());
        std::memset(into ? channels : paged, 0, 2 * bench::kChannelRowsLayerBytes);
        bench::transpose_rows(reinterpret_cast<char*>(into ? channels : paged), reinterpret_cast<const char*>(from), b.paged_order, b.cells, direction, threads, way);
        CHECK(wrong_elements(channels, paged, b) == 0);
      }
}

TEST_CASE("row transpose: the check catches the layers copied without transposing, and tokens in cells in order (the controls)", "[bench][transpose]") {
  Buffers b = random_layers(1, 3);
  std::uint16_t* channels = line_aligned(b.channels);
  std::uint16_t* paged = line_aligned(b.paged);
  std::mt19937 rng(11);
  for (std::size_t e = 0; e < kLayerElements; ++e) paged[e] = static_cast<std::uint16_t>(rng());
  SECTION("copied without transposing") {
    std::memcpy(channels, paged, bench::kChannelRowsLayerBytes);
    CHECK(wrong_elements(channels, paged, b) > 0);
  }
  SECTION("the tokens placed in cells in order, not by the cells; the same move by the cells is exact") {
    std::vector<std::uint32_t> in_order(bench::kContextTokens);
    std::iota(in_order.begin(), in_order.end(), 0u);
    for (const auto* cells : {&in_order, &b.cells}) {
      bench::transpose_rows(reinterpret_cast<char*>(channels), reinterpret_cast<const char*>(paged), b.paged_order, *cells,
                            bench::RowTransposeDirection::IntoChannelRows, 1, bench::RowTransposeWay::Straight);
      if (cells == &in_order) CHECK(wrong_elements(channels, paged, b) > 0);
      else CHECK(wrong_elements(channels, paged, b) == 0);
    }
  }
}

// The sweep's gathered-row transposing pattern (bench/row_transpose.hpp): every element of llama.cpp's
// transposed V lands where the definition says, both ways, straight and staged, at one and two threads,
// checked element by element; the control shows the check tells the channel rows copied untransposed.
// Over pages of K and V interleaved by head, each V element and each K element likewise; the control shows
// the check tells those pages read as V rows alone.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "bench/row_transpose.hpp"
#include "bench/paged_layers.hpp"

using namespace kvlayout;

namespace {

// The definition: token-major pages, a token's 1024 channels in a row (test::PagedLayers::wrong_elements).
std::size_t wrong_elements(test::PagedLayers& b) {
  return b.wrong_elements([](std::size_t lane, std::size_t c) { return lane * bench::kChannels + c; });
}

}  // namespace

TEST_CASE("row transpose: every element of llama.cpp's transposed V lands where the definition says, both ways, straight (AVX2 and AVX-512) and staged, one and two threads",
          "[bench][transpose]") {
  for (auto direction : {bench::RowTransposeDirection::IntoChannelRows, bench::RowTransposeDirection::OutOfChannelRows})
    for (auto way : {bench::RowTransposeWay::Straight, bench::RowTransposeWay::Staged, bench::RowTransposeWay::StraightAvx512})
      for (int threads : {1, 2}) {
        const bool into = direction == bench::RowTransposeDirection::IntoChannelRows;
        if (way == bench::RowTransposeWay::StraightAvx512 && !bench::cpu_has_avx512bw()) {
          WARN("this CPU has no AVX-512 BW: the straight way in AVX-512 is not run here");
          continue;
        }
        INFO((into ? "into" : "out of") << " channel rows, "
                                        << (way == bench::RowTransposeWay::Staged ? "staged" : way == bench::RowTransposeWay::Straight ? "straight" : "straight, AVX-512")
                                        << ", " << threads << " threads");
        test::PagedLayers b = test::random_paged_layers(2, static_cast<unsigned>(threads) * 31u + into);
        b.fill(into, 7);
        bench::transpose_rows(reinterpret_cast<char*>(into ? b.channel_rows() : b.pages()), reinterpret_cast<const char*>(into ? b.pages() : b.channel_rows()),
                              b.paged_order, b.cells, direction, threads, way);
        CHECK(wrong_elements(b) == 0);
      }
}

TEST_CASE("row transpose: the check catches the layers copied without transposing, and tokens in cells in order (the controls)", "[bench][transpose]") {
  test::check_controls(wrong_elements, [](test::PagedLayers& b, const std::vector<std::uint32_t>& cells) {
    bench::transpose_rows(reinterpret_cast<char*>(b.channel_rows()), reinterpret_cast<const char*>(b.pages()), b.paged_order, cells,
                          bench::RowTransposeDirection::IntoChannelRows, 1, bench::RowTransposeWay::Straight);
  });
}

namespace {

// Pages of K and V interleaved head by head (bench::PagedRows::KeyValueInterleaved): `layers` layers of
// 128 pages of 64 KiB in a random order on the paged side, and of channel rows then K rows on the other.
struct InterleavedLayers {
  static constexpr std::size_t kLayerElements = bench::kInterleavedLayerBytes / 2;
  std::vector<std::uint16_t> channels, paged;  // plus room for 64-byte alignment
  std::vector<std::uint32_t> paged_order, cells;
  explicit InterleavedLayers(std::size_t layers, unsigned seed) : channels(layers * kLayerElements + 32), paged(layers * kLayerElements + 32) {
    std::mt19937 rng(seed);
    paged_order.resize(layers * bench::kPagesPerLayer);
    std::iota(paged_order.begin(), paged_order.end(), 0u);
    std::shuffle(paged_order.begin(), paged_order.end(), rng);
    cells.resize(bench::kContextTokens);
    std::iota(cells.begin(), cells.end(), 0u);
    std::shuffle(cells.begin(), cells.end(), rng);
  }
  std::size_t layers() const { return paged_order.size() / bench::kPagesPerLayer; }
  std::uint16_t* channel_side() { return test::line_aligned(channels); }
  std::uint16_t* pages() { return test::line_aligned(paged); }
  void fill(bool from_pages, unsigned seed) {
    std::mt19937 rng(seed);
    std::uint16_t* from = from_pages ? pages() : channel_side();
    for (std::size_t e = 0; e < layers() * kLayerElements; ++e) from[e] = static_cast<std::uint16_t>(rng());
    std::fill_n(from_pages ? channel_side() : pages(), layers() * kLayerElements, std::uint16_t{0});
  }
  // The elements out of place, by the definition: dim d of head h of token t of layer l holds its K at
  // element h x 256 + d and its V at h x 256 + 128 + d of the token's 4 KiB row (row t % 16 of page
  // paged_order[l x 128 + t / 16]); on the other side its V at [l][h x 128 + d][cells[t]] of the channel
  // rows, its K at [l][cells[t]][h x 128 + d] of the K rows after them.
  std::size_t wrong_elements() {
    const std::uint16_t* side = channel_side();
    std::size_t wrong = 0;
    for (std::size_t l = 0; l < layers(); ++l)
      for (std::size_t t = 0; t < bench::kContextTokens; ++t) {
        const std::uint16_t* row = pages() + std::size_t{paged_order[l * bench::kPagesPerLayer + t / bench::kPageTokens]} * (bench::kInterleavedPageBytes / 2) +
                                   t % bench::kPageTokens * 2 * bench::kChannels;
        const std::uint16_t* layer = side + l * kLayerElements;
        for (std::size_t c = 0; c < bench::kChannels; ++c) {
          const std::size_t h = c / 128, d = c % 128;
          wrong += layer[c * bench::kContextTokens + cells[t]] != row[h * 256 + 128 + d];
          wrong += layer[bench::kChannelRowsLayerBytes / 2 + cells[t] * bench::kChannels + c] != row[h * 256 + d];
        }
      }
    return wrong;
  }
};

}  // namespace

TEST_CASE("row transpose over pages of K and V interleaved by head: every V and K element lands where the definition says, both ways, straight (AVX2 and AVX-512), one and two threads",
          "[bench][transpose]") {
  for (auto direction : {bench::RowTransposeDirection::IntoChannelRows, bench::RowTransposeDirection::OutOfChannelRows})
    for (auto way : {bench::RowTransposeWay::Straight, bench::RowTransposeWay::StraightAvx512})
      for (int threads : {1, 2}) {
        const bool into = direction == bench::RowTransposeDirection::IntoChannelRows;
        if (way == bench::RowTransposeWay::StraightAvx512 && !bench::cpu_has_avx512bw()) {
          WARN("this CPU has no AVX-512 BW: the straight way in AVX-512 is not run here");
          continue;
        }
        INFO((into ? "into" : "out of") << " channel rows, " << (way == bench::RowTransposeWay::Straight ? "straight" : "straight, AVX-512") << ", "
                                        << threads << " threads");
        InterleavedLayers b(2, static_cast<unsigned>(threads) * 17u + into);
        b.fill(into, 9);
        bench::transpose_rows(reinterpret_cast<char*>(into ? b.channel_side() : b.pages()), reinterpret_cast<const char*>(into ? b.pages() : b.channel_side()),
                              b.paged_order, b.cells, direction, threads, way, bench::PagedRows::KeyValueInterleaved);
        CHECK(b.wrong_elements() == 0);
      }
}

TEST_CASE("row transpose over pages of K and V interleaved: the check catches the pages read as V rows alone (the control), and the staged way is refused",
          "[bench][transpose]") {
  InterleavedLayers b(1, 5);
  b.fill(true, 13);
  bench::transpose_rows(reinterpret_cast<char*>(b.channel_side()), reinterpret_cast<const char*>(b.pages()), b.paged_order, b.cells,
                        bench::RowTransposeDirection::IntoChannelRows, 1, bench::RowTransposeWay::Straight, bench::PagedRows::ValueRows);
  CHECK(b.wrong_elements() > 0);
  CHECK_THROWS_AS(bench::transpose_rows(reinterpret_cast<char*>(b.channel_side()), reinterpret_cast<const char*>(b.pages()), b.paged_order, b.cells,
                                        bench::RowTransposeDirection::IntoChannelRows, 1, bench::RowTransposeWay::Staged, bench::PagedRows::KeyValueInterleaved),
                  std::invalid_argument);
}

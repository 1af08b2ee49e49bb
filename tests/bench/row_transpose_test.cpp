// The sweep's gathered-row transposing pattern (bench/row_transpose.hpp): every element of llama.cpp's
// transposed V lands where the definition says, both ways, straight and staged, at one and two threads,
// checked element by element; the control shows the check tells the channel rows copied untransposed.
#include <catch2/catch.hpp>

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

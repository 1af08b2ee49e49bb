// The sweep's element scatter staged through slot rows (bench/slot_scatter.hpp): every element of vLLM's
// legacy token-fastest V lands in llama.cpp's transposed V where the definition says, both ways, at one and
// two threads, checked element by element; the controls show the check tells the pages copied untransposed
// and the tokens placed in cells in order.
#include <catch2/catch.hpp>

#include "bench/slot_scatter.hpp"
#include "bench/paged_layers.hpp"

using namespace kvlayout;

namespace {

// The definition: token-fastest pages, a channel's 16 tokens in a row, as vLLM's legacy value cache
// (test::PagedLayers::wrong_elements).
std::size_t wrong_elements(test::PagedLayers& b) {
  return b.wrong_elements([](std::size_t lane, std::size_t c) { return c * bench::kPageTokens + lane; });
}

}  // namespace

TEST_CASE("slot scatter: every element of the legacy V lands in llama.cpp's cells where the definition says, both ways, one and two threads",
          "[bench][scatter]") {
  for (auto direction : {bench::ScatterDirection::IntoSlots, bench::ScatterDirection::OutOfSlots})
    for (int threads : {1, 2}) {
      const bool into = direction == bench::ScatterDirection::IntoSlots;
      INFO((into ? "into" : "out of") << " the cells, " << threads << " threads");
      test::PagedLayers b = test::random_paged_layers(2, static_cast<unsigned>(threads) * 17u + into);
      b.fill(into, 5);
      bench::scatter_through_slot_rows(reinterpret_cast<char*>(into ? b.channel_rows() : b.pages()),
                                       reinterpret_cast<const char*>(into ? b.pages() : b.channel_rows()), b.paged_order, b.cells, direction, threads);
      CHECK(wrong_elements(b) == 0);
    }
}

TEST_CASE("slot scatter: the check catches the pages copied without transposing, and tokens in cells in order (the controls)", "[bench][scatter]") {
  test::check_controls(wrong_elements, [](test::PagedLayers& b, const std::vector<std::uint32_t>& cells) {
    bench::scatter_through_slot_rows(reinterpret_cast<char*>(b.channel_rows()), reinterpret_cast<const char*>(b.pages()), b.paged_order, cells,
                                     bench::ScatterDirection::IntoSlots, 1);
  });
}

// The sweep's element-by-element pattern (bench/element_scatter.hpp): every element lands in the slot the
// permutation gives, both ways, at one and two threads, checked against the definition; the control shows
// the check tells rows copied unpermuted from permuted ones.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <random>

#include "bench/element_scatter.hpp"

using namespace kvlayout;

namespace {

constexpr std::size_t kRows = 7;
constexpr std::size_t kRow = bench::kScatterRowElements;

struct Rows {
  std::vector<std::uint16_t> from = std::vector<std::uint16_t>(kRows * kRow + 32), to = std::vector<std::uint16_t>(kRows * kRow + 32);
  std::vector<std::uint32_t> slots = std::vector<std::uint32_t>(kRow);
  std::uint16_t* from_row(std::size_t r) { return line_aligned(from) + r * kRow; }
  std::uint16_t* to_row(std::size_t r) { return line_aligned(to) + r * kRow; }
  static std::uint16_t* line_aligned(std::vector<std::uint16_t>& v) {
    const auto at = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + (64 - at % 64) % 64 / 2;
  }
};

Rows random_rows(unsigned seed) {
  std::mt19937 rng(seed);
  Rows r;
  for (auto& e : r.from) e = static_cast<std::uint16_t>(rng());
  std::iota(r.slots.begin(), r.slots.end(), 0u);
  std::shuffle(r.slots.begin(), r.slots.end(), rng);
  return r;
}

// Target elements that differ from the definition.
std::size_t wrong_elements(Rows& r, bench::ScatterDirection direction) {
  std::size_t wrong = 0;
  for (std::size_t row = 0; row < kRows; ++row)
    for (std::size_t t = 0; t < kRow; ++t) {
      if (direction == bench::ScatterDirection::IntoSlots) wrong += r.to_row(row)[r.slots[t]] != r.from_row(row)[t];
      else wrong += r.to_row(row)[t] != r.from_row(row)[r.slots[t]];
    }
  return wrong;
}

}  // namespace

TEST_CASE("element scatter: every element lands in its slot, both ways, one and two threads", "[bench][scatter]") {
  for (auto direction : {bench::ScatterDirection::IntoSlots, bench::ScatterDirection::OutOfSlots})
    for (int threads : {1, 2}) {
      INFO((direction == bench::ScatterDirection::IntoSlots ? "into" : "out of") << " slots, " << threads << " threads");
      Rows r = random_rows(static_cast<unsigned>(threads) * 13u + (direction == bench::ScatterDirection::OutOfSlots));
      bench::scatter_rows(reinterpret_cast<char*>(r.to_row(0)), reinterpret_cast<const char*>(r.from_row(0)), kRows, r.slots, direction, threads);
      CHECK(wrong_elements(r, direction) == 0);
    }
}

TEST_CASE("element scatter: the check catches rows copied unpermuted (the control)", "[bench][scatter]") {
  Rows r = random_rows(9);
  std::memcpy(r.to_row(0), r.from_row(0), kRows * bench::kScatterRowBytes);
  CHECK(wrong_elements(r, bench::ScatterDirection::IntoSlots) > 0);
  CHECK(wrong_elements(r, bench::ScatterDirection::OutOfSlots) > 0);
}

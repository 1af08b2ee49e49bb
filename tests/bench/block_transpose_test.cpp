// The sweep's transposing pattern (bench/block_transpose.hpp): every block lands transposed where its
// order says, in both directions and at one and two threads, checked element by element against the
// definition, as 2-byte elements and as 16-byte packs; the controls show the check tells a block copied
// untransposed from a transposed one, and packs from elements.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <random>

#include "bench/block_transpose.hpp"

using namespace kvlayout;

namespace {

constexpr std::size_t kElements = bench::kTransposeBlockBytes / 2;

struct Buffers {
  std::vector<std::uint16_t> from, to;
  std::vector<std::uint32_t> from_order, to_order;
};

// `blocks` blocks of distinct random elements, read and written in two random orders.
Buffers random_move(std::size_t blocks, unsigned seed) {
  std::mt19937 rng(seed);
  Buffers b;
  b.from.resize(blocks * kElements + 32);  // 64-byte alignment below
  b.to.assign(blocks * kElements + 32, 0);
  for (auto& e : b.from) e = static_cast<std::uint16_t>(rng());
  b.from_order.resize(blocks), b.to_order.resize(blocks);
  std::iota(b.from_order.begin(), b.from_order.end(), 0u), std::iota(b.to_order.begin(), b.to_order.end(), 0u);
  std::shuffle(b.from_order.begin(), b.from_order.end(), rng), std::shuffle(b.to_order.begin(), b.to_order.end(), rng);
  return b;
}

template <class T>
T* line_aligned(std::vector<T>& v) {
  const auto at = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + (64 - at % 64) % 64 / sizeof(T);
}

// The definition: token t, column c of block k (a column `unit` elements: 1, or 8 for 16-byte packs) sits at
// [c][t] on the token-fastest side and [t][c] on the token-major one. Counts the target elements that differ
// from it.
std::size_t wrong_elements(const std::uint16_t* to, const std::uint16_t* from, const Buffers& b, bench::TransposeDirection direction,
                           std::size_t unit = 1) {
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < b.from_order.size(); ++k) {
    const std::uint16_t* f = from + std::size_t{b.from_order[k]} * kElements;
    const std::uint16_t* t = to + std::size_t{b.to_order[k]} * kElements;
    for (std::size_t token = 0; token < bench::kBlockTokens; ++token)
      for (std::size_t c = 0; c < bench::kBlockColumns / unit; ++c)
        for (std::size_t e = 0; e < unit; ++e) {
          const std::size_t token_major = token * bench::kBlockColumns + c * unit + e, token_fastest = (c * bench::kBlockTokens + token) * unit + e;
          const bool out = direction == bench::TransposeDirection::OutOfTokenFastest;
          wrong += t[out ? token_major : token_fastest] != f[out ? token_fastest : token_major];
        }
  }
  return wrong;
}

}  // namespace

TEST_CASE("block transpose: every block lands transposed where its order says, as 2-byte elements and as 16-byte packs, both ways, streamed "
          "and staged, one and two threads, neither passing for the other (a control)",
          "[bench][transpose]") {
  for (auto unit : {bench::TransposeUnit::Element, bench::TransposeUnit::Pack16})
    for (auto direction : {bench::TransposeDirection::OutOfTokenFastest, bench::TransposeDirection::IntoTokenFastest})
      for (auto way : {bench::TransposeWay::Streamed, bench::TransposeWay::Staged})
        for (int threads : {1, 2}) {
          const bool packs = unit == bench::TransposeUnit::Pack16;
          INFO((packs ? "packs " : "elements ") << (direction == bench::TransposeDirection::OutOfTokenFastest ? "out of" : "into") << " token-fastest, "
                                                << (way == bench::TransposeWay::Staged ? "staged" : "streamed") << ", " << threads << " threads");
          Buffers b = random_move(5, static_cast<unsigned>(threads) * 17u + (direction == bench::TransposeDirection::IntoTokenFastest) + 5u * packs);
          std::uint16_t* from = line_aligned(b.from);
          std::uint16_t* to = line_aligned(b.to);
          bench::transpose_blocks(reinterpret_cast<char*>(to), reinterpret_cast<const char*>(from), b.from_order, b.to_order, direction, threads, way, unit);
          CHECK(wrong_elements(to, from, b, direction, packs ? 8 : 1) == 0);
          CHECK(wrong_elements(to, from, b, direction, packs ? 1 : 8) > 0);
        }
}

TEST_CASE("block transpose: the check catches blocks copied without transposing (the control)", "[bench][transpose]") {
  Buffers b = random_move(3, 5);
  std::uint16_t* from = line_aligned(b.from);
  std::uint16_t* to = line_aligned(b.to);
  for (std::size_t k = 0; k < b.from_order.size(); ++k)
    std::memcpy(to + std::size_t{b.to_order[k]} * kElements, from + std::size_t{b.from_order[k]} * kElements, bench::kTransposeBlockBytes);
  CHECK(wrong_elements(to, from, b, bench::TransposeDirection::OutOfTokenFastest) > 0);
  CHECK(wrong_elements(to, from, b, bench::TransposeDirection::IntoTokenFastest) > 0);
}

// The sweep's transposing pattern (bench/block_transpose.hpp): every block lands transposed where its
// order says, in both directions and at one and two threads, checked element by element against the
// definition, as 2-byte elements and as 16-byte packs, with the token-major side's rows in the block or
// one by one where token_rows places them; the controls show the check tells a block copied untransposed
// from a transposed one, packs from elements, and rows one by one from the block's own rows.
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
// [c][t] on the token-fastest side and [t][c] on the token-major one, whose row t is the block's own or,
// with `token_rows`, row token_rows[16 k + t] of its buffer. Counts the target elements that differ from it.
std::size_t wrong_elements(const std::uint16_t* to, const std::uint16_t* from, const Buffers& b, bench::TransposeDirection direction,
                           std::size_t unit = 1, const std::vector<std::uint32_t>* token_rows = nullptr) {
  const bool out = direction == bench::TransposeDirection::OutOfTokenFastest;
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < b.from_order.size(); ++k) {
    const std::uint16_t* f = from + std::size_t{b.from_order[k]} * kElements;
    const std::uint16_t* t = to + std::size_t{b.to_order[k]} * kElements;
    for (std::size_t token = 0; token < bench::kBlockTokens; ++token) {
      const std::uint16_t* major = out ? t : f;  // the token-major side's row `token`
      std::size_t row = token * bench::kBlockColumns;
      if (token_rows != nullptr) major = out ? to : from, row = std::size_t{(*token_rows)[bench::kBlockTokens * k + token]} * bench::kBlockColumns;
      const std::uint16_t* fastest = out ? f : t;
      for (std::size_t c = 0; c < bench::kBlockColumns / unit; ++c)
        for (std::size_t e = 0; e < unit; ++e) {
          const std::uint16_t token_major = major[row + c * unit + e], token_fastest = fastest[(c * bench::kBlockTokens + token) * unit + e];
          wrong += token_major != token_fastest;
        }
    }
  }
  return wrong;
}

}  // namespace

TEST_CASE("block transpose: every block lands transposed where its order says, as 2-byte elements and as 16-byte packs, both ways, streamed "
          "and staged, one and two threads, with its token rows in the block or one by one, neither passing for the other (controls)",
          "[bench][transpose]") {
  for (auto unit : {bench::TransposeUnit::Element, bench::TransposeUnit::Pack16})
    for (auto direction : {bench::TransposeDirection::OutOfTokenFastest, bench::TransposeDirection::IntoTokenFastest})
      for (auto way : {bench::TransposeWay::Streamed, bench::TransposeWay::Staged})
        for (int threads : {1, 2})
          for (bool one_by_one : {false, true}) {
            const bool packs = unit == bench::TransposeUnit::Pack16, out = direction == bench::TransposeDirection::OutOfTokenFastest;
            INFO((packs ? "packs " : "elements ") << (out ? "out of" : "into") << " token-fastest, " << (way == bench::TransposeWay::Staged ? "staged" : "streamed")
                                                  << ", " << threads << " threads" << (one_by_one ? ", token rows one by one" : ""));
            const unsigned seed = static_cast<unsigned>(threads) * 17u + !out + 5u * packs + 31u * one_by_one;
            Buffers b = random_move(5, seed);
            std::vector<std::uint32_t> token_rows(5 * bench::kBlockTokens);
            std::iota(token_rows.begin(), token_rows.end(), 0u);
            std::shuffle(token_rows.begin(), token_rows.end(), std::mt19937(seed));
            const std::vector<std::uint32_t>* rows = one_by_one ? &token_rows : nullptr;
            std::uint16_t* from = line_aligned(b.from);
            std::uint16_t* to = line_aligned(b.to);
            bench::transpose_blocks(reinterpret_cast<char*>(to), reinterpret_cast<const char*>(from), b.from_order, b.to_order, direction, threads, way, unit,
                                    rows);
            CHECK(wrong_elements(to, from, b, direction, packs ? 8 : 1, rows) == 0);
            CHECK(wrong_elements(to, from, b, direction, packs ? 1 : 8, rows) > 0);
            if (one_by_one) CHECK(wrong_elements(to, from, b, direction, packs ? 8 : 1) > 0);
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

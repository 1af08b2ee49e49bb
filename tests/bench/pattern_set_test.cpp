// The sweep's pattern set (bench/pattern_set.hpp): each ceiling key the sweep holds pairs against is served
// by the rows it names, and every row moves each of its elements exactly once (the bytes it moves are a
// permutation of those it reads: the set wires each bare loop to its own orders and byte count). The
// control shows the permutation check tells a move that writes one element twice. Where each element
// lands is each pattern's own test (block_transpose_test.cpp, row_transpose_test.cpp,
// element_scatter_test.cpp, slot_scatter_test.cpp). The rows over pages of K and V interleaved take 8 MiB
// (one such layer), so their own case builds a set that large.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <random>

#include "bench/pattern_set.hpp"
#include "bench/row_transpose.hpp"

using namespace kvlayout;

namespace {

constexpr std::size_t kSetBytes = std::size_t{4} << 20;  // the least the set takes: one llama.cpp layer

std::vector<std::string> titles(const bench::PatternSet& set, const std::string& key) {
  std::vector<std::string> out;
  for (std::size_t i : set.serving(key)) out.push_back(set.rows()[i].title);
  return out;
}

bool any_title_has(const std::vector<std::string>& v, const std::string& text) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& t) { return t.find(text) != std::string::npos; });
}

// 64-byte aligned room for `bytes`.
struct Buffer {
  explicit Buffer(std::size_t bytes) : storage(bytes + 64) {}
  char* data() { return storage.data() + (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64) % 64; }
  std::vector<char> storage;
};

// Whether the 16-bit elements of to[0 .. bytes) are those of from[0 .. bytes), each as often.
bool same_elements(const char* to, const char* from, std::size_t bytes) {
  std::vector<std::uint16_t> a(bytes / 2), b(bytes / 2);
  std::memcpy(a.data(), to, bytes);
  std::memcpy(b.data(), from, bytes);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

TEST_CASE("pattern set: each key the sweep holds pairs against is served by its own rows, and runs by none", "[bench][patterns]") {
  const bench::PatternSet set(kSetBytes);
  CHECK(bench::ceiling_key("transpose", "") == "transpose");
  CHECK(bench::ceiling_key("transpose", "into token-fastest") == "transpose (into token-fastest)");
  const auto out_of = titles(set, "transpose (out of token-fastest)");
  CHECK(out_of.size() == 2);
  CHECK(any_title_has(out_of, "out of token-fastest, streamed"));
  CHECK(any_title_has(out_of, "out of token-fastest, staged"));
  CHECK(titles(set, "transpose (into token-fastest)").size() == 1);
  CHECK(titles(set, "transpose").size() == 3);
  CHECK(!any_title_has(titles(set, "transpose"), "token rows one by one"));
  // The legacy cache against a slot pool: the blocks with their token rows one by one, of its turn only.
  const auto gathered_into = titles(set, "transpose, gathered rows (into token-fastest)");
  CHECK(gathered_into.size() == 1);
  CHECK(any_title_has(gathered_into, "into token-fastest, streamed, token rows one by one"));
  const auto gathered_out = titles(set, "transpose, gathered rows (out of token-fastest)");
  CHECK(gathered_out.size() == 2);
  CHECK(any_title_has(gathered_out, "out of token-fastest, staged, token rows one by one"));
  CHECK(!any_title_has(gathered_out, "into token-fastest"));
  // llama.cpp's V rows each way: straight and staged, and straight in AVX-512 where the CPU has it.
  const std::size_t row_ways = bench::cpu_has_avx512bw() ? 3 : 2;
  const auto into_rows = titles(set, "transpose, gathered rows (whole lines, source rows gathered)");
  CHECK(into_rows.size() == row_ways);
  CHECK(!any_title_has(into_rows, "into random 32 KiB pages"));
  CHECK(any_title_has(into_rows, "straight, AVX-512") == bench::cpu_has_avx512bw());
  CHECK(titles(set, "transpose, gathered rows (whole lines, target rows gathered)").size() == row_ways);
  CHECK(titles(set, "transpose, gathered rows").size() == 3 + 2 * row_ways);
  const auto scatter = titles(set, "element by element");
  CHECK(scatter.size() == 4);
  CHECK(any_title_has(scatter, "into slots, staged through 64-byte slot rows"));
  CHECK(any_title_has(scatter, "out of slots, staged through 64-byte slot rows"));
  for (const char* runs : {"runs 256 B .. 2 KiB", "runs >= 2 KiB", "runs < 256 B"}) CHECK(titles(set, runs).empty());
  for (const char* turn : {"out of token-fastest", "into token-fastest"}) {
    const std::size_t ways = std::string(turn) == "out of token-fastest" ? 2u : 1u;
    const auto packs = titles(set, bench::ceiling_key("transpose, packs", turn));
    CHECK(packs.size() == ways);
    CHECK(any_title_has(packs, std::string("16-byte packs transposed ") + turn));
    CHECK(!any_title_has(packs, "token rows one by one"));
    const auto gathered_packs = titles(set, bench::ceiling_key("transpose, packs, gathered rows", turn));
    CHECK(gathered_packs.size() == ways);
    CHECK(any_title_has(gathered_packs, std::string("16-byte packs transposed ") + turn));
    for (const std::string& title : gathered_packs) CHECK(title.find("token rows one by one") != std::string::npos);
  }
  CHECK(set.rows().size() == 22 + 2 * row_ways);
}

TEST_CASE("pattern set: every row moves each element of its bytes once, at one and two threads", "[bench][patterns]") {
  const bench::PatternSet set(kSetBytes);
  Buffer from(kSetBytes), to(kSetBytes);
  std::mt19937 rng(5);
  for (std::size_t e = 0; e < kSetBytes / 2; ++e) reinterpret_cast<std::uint16_t*>(from.data())[e] = static_cast<std::uint16_t>(rng());
  for (const bench::PatternRow& row : set.rows())
    for (int threads : {1, 2}) {
      INFO(row.title << ", " << threads << " threads");
      REQUIRE(row.bytes > 0);
      REQUIRE(row.bytes <= set.bytes());
      std::memset(to.data(), 0, kSetBytes);
      row.move(to.data(), from.data(), threads);
      CHECK(same_elements(to.data(), from.data(), row.bytes));
    }
}

TEST_CASE("pattern set: the permutation check tells a move that writes one element twice (the control)", "[bench][patterns]") {
  const bench::PatternSet set(kSetBytes);
  Buffer from(kSetBytes), to(kSetBytes);
  for (std::size_t e = 0; e < kSetBytes / 2; ++e) reinterpret_cast<std::uint16_t*>(from.data())[e] = static_cast<std::uint16_t>(e * 2654435761u >> 7);
  const bench::PatternRow& row = set.rows().back();
  row.move(to.data(), from.data(), 1);
  REQUIRE(same_elements(to.data(), from.data(), row.bytes));
  std::memcpy(to.data() + 2, to.data(), 2);  // the first element written over the second
  CHECK(!same_elements(to.data(), from.data(), row.bytes));
}

TEST_CASE("pattern set: from 8 MiB the K and V interleaved turns are served by their own rows, each moving every element of its bytes once", "[bench][patterns]") {
  constexpr std::size_t bytes = bench::kInterleavedLayerBytes;
  const bench::PatternSet set(bytes);
  const std::size_t row_ways = bench::cpu_has_avx512bw() ? 2 : 1;  // straight, and in AVX-512 where the CPU has it
  for (const char* turn : {"K and V interleaved, source rows gathered", "K and V interleaved, target rows gathered"}) {
    INFO(turn);
    const std::vector<std::size_t> rows = set.serving(bench::ceiling_key("transpose, gathered rows", turn));
    CHECK(rows.size() == row_ways);
    Buffer from(bytes), to(bytes);
    std::mt19937 rng(3);
    for (std::size_t e = 0; e < bytes / 2; ++e) reinterpret_cast<std::uint16_t*>(from.data())[e] = static_cast<std::uint16_t>(rng());
    for (std::size_t i : rows) {
      const bench::PatternRow& row = set.rows()[i];
      INFO(row.title);
      CHECK(row.bytes == bytes);
      std::memset(to.data(), 0, bytes);
      row.move(to.data(), from.data(), 2);
      CHECK(same_elements(to.data(), from.data(), row.bytes));
    }
  }
  // The generic key (a transpose of gathered rows with no one turn) is not held against them.
  CHECK(!any_title_has(titles(set, "transpose, gathered rows"), "K and V interleaved"));
  CHECK(set.rows().size() == 22 + 2 * (bench::cpu_has_avx512bw() ? 3 : 2) + 2 * row_ways);
}

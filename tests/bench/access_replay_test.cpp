// The sweep's roofline (bench/access_replay.hpp): the runs it observes are the move's, and replaying them
// moves the same bytes. Moves here are the test's own block copies, with random block orders, lengths and
// target holes, at every element size the shipped layouts use.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <numeric>
#include <random>

#include "bench/access_replay.hpp"

using namespace kvlayout;

namespace {

struct Block {
  std::size_t from = 0, to = 0, elements = 0;  // in elements, from each region's start
};

// A move of `count` blocks of 1 .. `longest` elements from the source region into a random order of
// target slots, leaving a random element between some slots unwritten.
std::vector<Block> random_blocks(std::mt19937& rng, std::size_t count, std::size_t longest) {
  std::vector<std::size_t> lengths(count);
  for (auto& l : lengths) l = 1 + rng() % longest;
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Block> blocks(count);
  std::size_t from = 0;
  for (std::size_t i = 0; i < count; ++i) blocks[i].from = from, blocks[i].elements = lengths[i], from += lengths[i];
  std::size_t to = 0;
  for (std::size_t i : order) blocks[i].to = to, to += lengths[i] + rng() % 2;  // a hole after some
  return blocks;
}

struct Arena {
  std::vector<char> bytes = std::vector<char>(std::size_t{1} << 20);
  char* base() { return bytes.data(); }
};

}  // namespace

TEST_CASE("access replay: the observed runs are the move's, and replaying them moves the same bytes", "[bench][replay]") {
  for (std::size_t e : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      std::mt19937 rng(seed * 7 + static_cast<unsigned>(e));
      // Blocks of a few elements, and (every fourth seed) blocks of up to 3 pages, which the four-stream
      // replay copies a page per turn.
      const std::vector<Block> blocks = random_blocks(rng, 1 + rng() % 40, seed % 4 == 0 ? 3 * 4096 / e : 9);
      Arena arena;
      bench::Region source{arena.base() + 64 * e, 0}, target{arena.base() + (std::size_t{1} << 19), 0};  // element-aligned, apart
      for (const Block& b : blocks) source.bytes = std::max(source.bytes, (b.from + b.elements) * e), target.bytes = std::max(target.bytes, (b.to + b.elements) * e);
      auto move = [&] {
        for (const Block& b : blocks) std::memcpy(target.base + b.to * e, source.base + b.from * e, b.elements * e);
      };
      const std::vector<bench::Run> runs = bench::observe_runs(move, {source}, {target}, e, arena.base());
      INFO("element bytes " << e << ", seed " << seed);
      // Every moved element in exactly one run, at the right place; runs in target order, maximal.
      std::size_t moved = 0;
      for (const Block& b : blocks) moved += b.elements;
      std::size_t in_runs = 0;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        in_runs += runs[i].elements;
        if (i > 0) {
          CHECK(runs[i - 1].to + runs[i - 1].elements <= runs[i].to);
          CHECK_FALSE((runs[i - 1].to + runs[i - 1].elements == runs[i].to && runs[i - 1].from + runs[i - 1].elements == runs[i].from));
        }
      }
      CHECK(in_runs == moved);
      const auto source_first = static_cast<std::uint32_t>((source.base - arena.base()) / static_cast<std::ptrdiff_t>(e));
      const auto target_first = static_cast<std::uint32_t>((target.base - arena.base()) / static_cast<std::ptrdiff_t>(e));
      for (const Block& b : blocks)
        for (std::size_t k = 0; k < b.elements; ++k) {
          const std::size_t to = target_first + b.to + k, from = source_first + b.from + k;
          const auto holder = std::find_if(runs.begin(), runs.end(), [&](const bench::Run& r) { return r.to <= to && to < r.to + r.elements; });
          REQUIRE(holder != runs.end());
          CHECK(holder->from + (to - holder->to) == from);
        }
      // Replay, in either order and either way of streaming, leaves the target as the move does.
      for (const auto& [by_source, streams] : {std::pair{false, bench::Streams::One}, std::pair{true, bench::Streams::One},
                                               std::pair{false, bench::Streams::Four}, std::pair{true, bench::Streams::Four}}) {
        INFO((by_source ? "source" : "target") << " order, " << (streams == bench::Streams::Four ? "four streams" : "one stream"));
        for (std::size_t i = 0; i < source.bytes; ++i) source.base[i] = static_cast<char>(rng());
        std::memset(target.base, 0x5A, target.bytes);
        move();
        const std::vector<char> expected(target.base, target.base + target.bytes);
        std::memset(target.base, 0x5A, target.bytes);
        bench::replay(by_source ? bench::in_source_order(runs) : runs, arena.base(), e, 1 + static_cast<int>(seed % 2), streams);
        CHECK(std::vector<char>(target.base, target.base + target.bytes) == expected);
      }
    }
  }
}

TEST_CASE("access replay: a shortest run kept drops exactly the shorter runs", "[bench][replay]") {
  std::size_t dropped = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    const std::size_t e = 2;
    const std::vector<Block> blocks = random_blocks(rng, 1 + rng() % 60, 12);
    Arena arena;
    bench::Region source{arena.base() + 64 * e, 0}, target{arena.base() + (std::size_t{1} << 19), 0};
    for (const Block& b : blocks) source.bytes = std::max(source.bytes, (b.from + b.elements) * e), target.bytes = std::max(target.bytes, (b.to + b.elements) * e);
    auto move = [&] {
      for (const Block& b : blocks) std::memcpy(target.base + b.to * e, source.base + b.from * e, b.elements * e);
    };
    const std::vector<bench::Run> all = bench::observe_runs(move, {source}, {target}, e, arena.base());
    const std::size_t shortest = 1 + rng() % 10;
    INFO("seed " << seed << ", shortest kept " << shortest);
    std::vector<bench::Run> expected;
    std::copy_if(all.begin(), all.end(), std::back_inserter(expected), [&](const bench::Run& r) { return r.elements >= shortest; });
    const std::vector<bench::Run> kept = bench::observe_runs(move, {source}, {target}, e, arena.base(), shortest);
    REQUIRE(kept.size() == expected.size());
    for (std::size_t i = 0; i < kept.size(); ++i) {
      CHECK(kept[i].from == expected[i].from);
      CHECK(kept[i].to == expected[i].to);
      CHECK(kept[i].elements == expected[i].elements);
    }
    dropped += all.size() - kept.size();
  }
  CHECK(dropped > 0);  // the filter acted on some seeds: the equality above is not of two unfiltered lists
}

TEST_CASE("access replay: source order sorts the same runs by where they are read", "[bench][replay]") {
  const std::vector<bench::Run> runs = {{40, 0, 4}, {0, 4, 8}, {20, 12, 2}};
  const std::vector<bench::Run> sorted = bench::in_source_order(runs);
  REQUIRE(sorted.size() == 3);
  CHECK(sorted[0].from == 0);
  CHECK(sorted[1].from == 20);
  CHECK(sorted[2].from == 40);
  CHECK(sorted[2].to == 0);
}

TEST_CASE("access replay: a move that writes an element in one pass and not the next is refused", "[bench][replay]") {
  // The control: observe_runs must not build runs from a move that is not one fixed function of the
  // tags (here it writes element 3 on the first call only), which would make the replay a different move.
  Arena arena;
  bench::Region source{arena.base(), 64}, target{arena.base() + 4096, 64};
  int calls = 0;
  auto move = [&] {
    std::memcpy(target.base, source.base, 6);
    if (calls++ == 0) std::memcpy(target.base + 6, source.base + 6, 2);
  };
  CHECK_THROWS_WITH(bench::observe_runs(move, {source}, {target}, 2, arena.base()), Catch::Contains("written in one pass and not another"));
  // The same move without the flaw is observed: one run of 3 elements (2-byte elements: two passes).
  calls = 5;
  const auto runs = bench::observe_runs(move, {source}, {target}, 2, arena.base());
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].elements == 3);
}

TEST_CASE("access replay: the comparison catches a replay that misses a run, in either way of streaming", "[bench][replay]") {
  // The control of the first case's check: the same comparison on a replay given every run but one.
  std::mt19937 rng(11);
  const std::vector<Block> blocks = random_blocks(rng, 24, 3 * 4096 / 2);
  Arena arena;
  bench::Region source{arena.base() + 128, 0}, target{arena.base() + (std::size_t{1} << 19), 0};
  for (const Block& b : blocks) source.bytes = std::max(source.bytes, (b.from + b.elements) * 2), target.bytes = std::max(target.bytes, (b.to + b.elements) * 2);
  auto move = [&] {
    for (const Block& b : blocks) std::memcpy(target.base + b.to * 2, source.base + b.from * 2, b.elements * 2);
  };
  std::vector<bench::Run> runs = bench::observe_runs(move, {source}, {target}, 2, arena.base());
  REQUIRE(runs.size() > 1);
  runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(runs.size() / 2));
  for (bench::Streams streams : {bench::Streams::One, bench::Streams::Four}) {
    for (std::size_t i = 0; i < source.bytes; ++i) source.base[i] = static_cast<char>(1 + rng() % 255);
    std::memset(target.base, 0, target.bytes);
    move();
    const std::vector<char> expected(target.base, target.base + target.bytes);
    std::memset(target.base, 0, target.bytes);
    bench::replay(runs, arena.base(), 2, 2, streams);
    CHECK(std::vector<char>(target.base, target.base + target.bytes) != expected);
  }
}

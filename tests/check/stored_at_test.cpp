// stored_at: the inverse of the address function at one element under concrete tables, decided by the
// solver with lazily pinned tables. Cross-checked against the concrete evaluator on every element of a
// small instance, and shown at production size (10^6-entry tables not asserted entry by entry).
#include <catch2/catch.hpp>

#include <map>

#include "check/stored_at.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/layout_fixture.hpp"

using namespace kvlayout;

namespace {

// element -> position, by enumerating every position of instance 0 with the concrete evaluator.
std::map<std::int64_t, std::vector<std::int64_t>> forward_map(const layout::BoundLayout& b, const layout::BlockTables& t) {
  std::map<std::int64_t, std::vector<std::int64_t>> out;
  std::vector<std::int64_t> c(b.coord_extents.size(), 0);
  while (true) {
    layout::Location l = layout::locate(b, c, t);
    if (l.placement == layout::Placement::Held && l.address.instance == 0 && l.address.tensor == 0) out[l.address.offset] = c;
    std::size_t k = c.size();
    while (k > 0 && ++c[k - 1] == b.coord_extents[k - 1]) c[--k] = 0;
    if (k == 0) return out;
  }
}

}  // namespace

TEST_CASE("stored_at agrees with the concrete evaluator on sampled elements, random tables", "[check][stored_at]") {
  const auto b = test::bind_named("vllm-flash-nhd", "small");
  const layout::BlockTables tables = layout::random_tables(b, 7);
  const auto fwd = forward_map(b, tables);
  const std::int64_t size = b.tensors[0].size;
  int positions = 0, padding = 0;
  for (std::int64_t e = 0; e < size; e += 97) {  // a stride co-prime with every extent: hits every axis value
    check::StoredAt s = check::stored_at(b, tables, 0, 0, e);
    auto it = fwd.find(e);
    if (it == fwd.end()) {
      CHECK(s.kind == check::StoredAt::Kind::Padding);
      ++padding;
    } else {
      REQUIRE(s.kind == check::StoredAt::Kind::Position);
      CHECK(s.coord == it->second);
      ++positions;
    }
  }
  CHECK(positions > 0);
  CHECK(padding > 0);  // 67 tokens in 5 blocks of 16: the last block's slots 3..15 are padding
}

TEST_CASE("stored_at: past the allocation, a bad instance, and a reserved page", "[check][stored_at]") {
  const auto b = test::bind_named("vllm-flash-nhd", "small");
  const auto t = layout::identity_tables(b);
  CHECK(check::stored_at(b, t, 0, 0, b.tensors[0].size).kind == check::StoredAt::Kind::PastAllocation);
  CHECK(check::stored_at(b, t, 0, 0, -1).kind == check::StoredAt::Kind::PastAllocation);
  CHECK(check::stored_at(b, t, 0, b.tensors[0].instances, 0).kind == check::StoredAt::Kind::PastAllocation);
  // SGLang's page 0 is allocated but never stores a position: padding, proved.
  const auto s = test::bind_named("sglang-mha", "small");
  const auto st = layout::identity_tables(s);
  CHECK(check::stored_at(s, st, 0, 0, 0).kind == check::StoredAt::Kind::Padding);
  check::StoredAt held = check::stored_at(s, st, 0, 0, s.tensors[0].size - 1);
  CHECK((held.kind == check::StoredAt::Kind::Position || held.kind == check::StoredAt::Kind::Padding));
}

TEST_CASE("stored_at at production size with a reversed 10^4-entry table", "[check][stored_at]") {
  const auto b = test::bind_named("vllm-flash-nhd", "llama-3.1-70b");
  const auto t = layout::reversed_tables(b);
  // V of block_table's entry 0 (block num_blocks - 1 under the reversed table), slot 0, head 0, dim 0.
  const std::int64_t nb = b.values.at("num_blocks");
  const std::int64_t page = 16 * 8 * 128;
  check::StoredAt s = check::stored_at(b, t, 0, 3, nb * page + (nb - 1) * page);
  REQUIRE(s.kind == check::StoredAt::Kind::Position);
  CHECK(s.coord == std::vector<std::int64_t>{3, 1, 0, 0, 0});
  // The control: the same element under the identity table stores another token.
  check::StoredAt i = check::stored_at(b, layout::identity_tables(b), 0, 3, nb * page + (nb - 1) * page);
  REQUIRE(i.kind == check::StoredAt::Kind::Position);
  CHECK(i.coord != s.coord);
}

TEST_CASE("stored_at with a random 2^20-entry block table: lazily pinned, fast", "[check][stored_at]") {
  // 2^24 tokens in blocks of 16: a 2^20-entry table, which stored_at never asserts entry by entry.
  const auto b = test::bind_named("vllm-flash-nhd", "llama-3.1-70b", {{"num_tokens", 1 << 24}});
  REQUIRE(b.tables[0].length == (1 << 20));
  const auto t = layout::random_tables(b, 11);
  const std::int64_t page = 16 * 8 * 128;
  const std::int64_t block = t.entry(0, 777);  // token 777 * 16 + 5 lives in this block
  const std::int64_t element = page * (1 << 20) + block * page + 5 * 1024 + 3 * 128 + 9;  // V, slot 5, head 3, dim 9
  check::StoredAt s = check::stored_at(b, t, 0, 2, element);
  REQUIRE(s.kind == check::StoredAt::Kind::Position);
  CHECK(s.coord == std::vector<std::int64_t>{2, 1, 777 * 16 + 5, 3, 9});
}

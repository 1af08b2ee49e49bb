#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <stdexcept>

#include "layout/address.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"

using namespace kvlayout;
using kvlayout::test::bind_inline;
using kvlayout::test::flash_nhd_declaration;
using kvlayout::test::small_cache;
using kvlayout::test::TempDir;
using I = std::int64_t;

TEST_CASE("the address follows the block table entry of the token's block", "[layout][address]") {
  TempDir dir;
  auto b = bind_inline(dir, flash_nhd_declaration(), small_cache());
  auto tables = layout::identity_tables(b);
  layout::set_table(b, tables, "block_table", {2, 0, 1, 4, 3});
  std::vector<I> coord = {1, 1, 20, 3, 5};  // block 1 → physical block 0, slot 4
  auto loc = layout::locate(b, coord, tables);
  REQUIRE(loc.placement == layout::Placement::Held);
  CHECK(loc.address.instance == 1);
  CHECK(loc.address.index == std::vector<I>{1, 0, 4, 3, 5});
  CHECK(loc.address.offset == 5 * 1024 + 0 * 1024 + 4 * 64 + 3 * 16 + 5);
  CHECK(layout::byte_offset(b, loc.address) == 2 * loc.address.offset);
  CHECK(layout::format_coordinate(b, coord) == "(layer 1, V, token 20, head 3, dim 5)");
}

TEST_CASE("the first view whose domain holds a position stores it and none holding means not held", "[layout][address]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["holds"] = "head < 3";
  j["tensors"][0]["holds"] = "kv == 0";
  j["tensors"].push_back(spec::Json::parse(R"J({"name": "v_cache", "per": "layer", "holds": "kv == 1",
      "shape": ["num_blocks", "block_size", "num_kv_heads", "head_size"],
      "index": ["block_table[token / block_size]", "token % block_size", "head", "dim"]})J"));
  auto b = bind_inline(dir, j, small_cache());
  auto tables = layout::identity_tables(b);
  std::vector<I> k = {0, 0, 1, 2, 0}, v = {0, 1, 1, 2, 0}, dropped = {0, 1, 1, 3, 0};
  CHECK(layout::locate(b, k, tables).address.tensor == 0);
  auto lv = layout::locate(b, v, tables);
  CHECK(lv.address.tensor == 1);
  CHECK(lv.address.offset == 1 * 64 + 2 * 16);
  CHECK(layout::locate(b, dropped, tables).placement == layout::Placement::NotHeld);
}

TEST_CASE("an index past its extent, a missing table entry or an offset past the allocation is out of bounds", "[layout][address]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tensors"][0]["index"][2] = "token % block_size + 1";
  auto b = bind_inline(dir, j, small_cache());
  auto tables = layout::identity_tables(b);
  std::vector<I> last_in_block = {0, 0, 15, 0, 0}, inside = {0, 0, 14, 0, 0};
  auto loc = layout::locate(b, last_in_block, tables);
  CHECK(loc.placement == layout::Placement::OutOfBounds);
  CHECK_THAT(loc.violation, Catch::Contains("`token % block_size + 1` = 16 is outside [0, 16)"));
  CHECK(layout::locate(b, inside, tables).placement == layout::Placement::Held);

  j = flash_nhd_declaration();
  j["tensors"][0]["index"][1] = "block_table[token / block_size + 1]";
  b = bind_inline(dir, j, small_cache());
  std::vector<I> last_block = {0, 0, 66, 0, 0};
  loc = layout::locate(b, last_block, layout::identity_tables(b));
  CHECK(loc.placement == layout::Placement::OutOfBounds);
  CHECK_THAT(loc.violation, Catch::Contains("block_table[5] is outside the table's 5 entries"));

  j = flash_nhd_declaration();
  j["tensors"][0]["size"] = 5000;
  b = bind_inline(dir, j, small_cache());
  std::vector<I> far = {0, 1, 66, 3, 15};
  loc = layout::locate(b, far, layout::identity_tables(b));
  CHECK(loc.placement == layout::Placement::OutOfBounds);
  CHECK_THAT(loc.violation, Catch::Contains("outside the tensor's 5000 elements"));
}

TEST_CASE("error catalogue: coordinates out of range and index expressions that fail at a coordinate", "[layout][address][errors]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tensors"][0]["index"][4] = "dim / (token - 3) % 1 + dim";
  auto b = bind_inline(dir, j, small_cache());
  auto tables = layout::identity_tables(b);
  std::vector<I> bad_token = {0, 0, 67, 0, 0};
  CHECK_THROWS_WITH(layout::locate(b, bad_token, tables), Catch::Contains("token=67") && Catch::Contains("0 <= token < 67"));
  std::vector<I> at_zero = {0, 0, 3, 0, 0};
  try {
    layout::locate(b, at_zero, tables);
    FAIL("evaluated");
  } catch (const spec::SpecError& e) {
    CHECK(e.path == "/tensors/0/index/4");
    CHECK_THAT(e.what(), Catch::Contains("division by zero"));
  }
}

TEST_CASE("tables: identity, reversed and random are injective into their range and bad tables are rejected", "[layout][tables]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tables"]["block_table"]["range"] = spec::Json::array({5, "num_blocks * 4"});
  auto b = bind_inline(dir, j, small_cache());
  for (auto tables : {layout::identity_tables(b), layout::reversed_tables(b), layout::random_tables(b, 1),
                      layout::random_tables(b, 2)}) {
    std::vector<I> e;
    for (I i = 0; i < 5; ++i) e.push_back(tables.entry(0, i));
    std::set<I> distinct(e.begin(), e.end());
    CHECK(distinct.size() == 5);
    for (I v : e) CHECK((v >= 5 && v < 20));
  }
  auto tables = layout::identity_tables(b);
  CHECK_THROWS_WITH(layout::set_table(b, tables, "block_table", {5, 6}), Catch::Contains("found 2 entries"));
  CHECK_THROWS_WITH(layout::set_table(b, tables, "block_table", {5, 6, 7, 8, 20}), Catch::Contains("entry 4 = 20"));
  CHECK_THROWS_WITH(layout::set_table(b, tables, "block_table", {5, 6, 7, 8, 5}), Catch::Contains("the value 5 twice"));
  CHECK_THROWS_WITH(layout::set_table(b, tables, "blocks", {5, 6, 7, 8, 9}), Catch::Contains("one of: block_table"));
}

TEST_CASE("tables fixed at a few entries take those values and stay injective however long they are", "[layout][tables]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tables"]["block_table"]["range"] = spec::Json::array({5, "num_blocks * 4"});
  auto b = bind_inline(dir, j, small_cache());

  SECTION("a short table, checked entry by entry") {
    // Chains of swaps: 0 takes 1's value, 1 takes a value outside the identity's, 4 takes 0's old value.
    auto tables = layout::tables_with(b, {{{0, 6}, {1, 19}, {4, 5}}});
    CHECK(tables.entry(0, 0) == 6);
    CHECK(tables.entry(0, 1) == 19);
    CHECK(tables.entry(0, 4) == 5);
    std::set<I> distinct;
    for (I i = 0; i < 5; ++i) {
      I v = tables.entry(0, i);
      CHECK((v >= 5 && v < 20));
      distinct.insert(v);
    }
    CHECK(distinct.size() == 5);
  }
  SECTION("a table of 2^30 entries costs only its fixed entries and the ones swapped away") {
    b.tables[0].length = I{1} << 30;
    b.tables[0].end = b.tables[0].first + (I{1} << 31) - 64;
    const std::map<I, I> fixed = {{0, 5 + 999'999'999}, {999'999'999, 5}, {12, 5 + (I{1} << 30) + 7}, {13, 5 + 12}};
    auto tables = layout::tables_with(b, {fixed});
    for (const auto& [entry, value] : fixed) CHECK(tables.entry(0, entry) == value);
    const auto& overrides = tables.tables[0].overrides;
    CHECK(overrides.size() <= 2 * fixed.size());
    // Identity plus overrides is injective iff the overridden values are distinct and each one inside the
    // identity's image has its identity holder overridden too.
    std::set<I> values;
    for (const auto& [entry, value] : overrides) {
      CHECK(values.insert(value).second);
      if (value - 5 < b.tables[0].length) CHECK(overrides.count(value - 5) == 1);
    }
    CHECK(tables.entry(0, 500) == 505);
  }
  SECTION("fixed values outside the table or its range, or repeated, are refused") {
    CHECK_THROWS_AS(layout::tables_with(b, {{{5, 6}}}), std::invalid_argument);
    CHECK_THROWS_AS(layout::tables_with(b, {{{0, 20}}}), std::invalid_argument);
    CHECK_THROWS_AS(layout::tables_with(b, {{{0, 7}, {1, 7}}}), std::invalid_argument);
  }
}

#include <catch2/catch.hpp>

#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"

using namespace kvlayout;
using kvlayout::test::bind_inline;
using kvlayout::test::flash_nhd_declaration;
using kvlayout::test::small_cache;
using kvlayout::test::TempDir;

TEST_CASE("binding resolves parameters, extents and row-major strides", "[layout][bind]") {
  TempDir dir;
  auto b = bind_inline(dir, flash_nhd_declaration(), small_cache());
  REQUIRE(b.fits());
  CHECK(b.values.at("num_blocks") == 5);
  CHECK(b.coord_extents == std::vector<std::int64_t>{2, 2, 67, 4, 16});
  REQUIRE(b.tables.size() == 1);
  CHECK(b.tables[0].length == 5);
  CHECK(b.tables[0].end == 5);
  const auto& t = b.tensors.at(0);
  CHECK(t.instances == 2);
  CHECK(t.per == 0);
  CHECK(t.views[0].extents == std::vector<std::int64_t>{2, 5, 16, 4, 16});
  CHECK(t.views[0].strides == std::vector<std::int64_t>{5120, 1024, 64, 16, 1});
  CHECK(t.size == 2 * 5120);
}

TEST_CASE("a stride order permutes the physical order as vLLM's get_kv_cache_stride_order does", "[layout][bind]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tensors"][0]["stride_order"] = spec::Json::array({0, 1, 3, 2, 4});
  auto b = bind_inline(dir, j, small_cache());
  // physical (2, NB=5, H=4, BS=16, D=16)
  CHECK(b.tensors[0].views[0].strides == std::vector<std::int64_t>{5120, 1024, 16, 256, 1});
  j["tensors"][0]["stride_order"] = spec::Json::array({4, 3, 2, 1, 0});  // column-major
  b = bind_inline(dir, j, small_cache());
  CHECK(b.tensors[0].views[0].strides == std::vector<std::int64_t>{1, 2, 10, 160, 640});
}

TEST_CASE("explicit strides allow gaps and zero strides and the allocation is the cosize or the declared size", "[layout][bind]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["tensors"][0]["strides"] = spec::Json::array({6000, 1100, 68, 17, 1});  // gaps after each row
  auto b = bind_inline(dir, j, small_cache());
  CHECK(b.tensors[0].views[0].strides == std::vector<std::int64_t>{6000, 1100, 68, 17, 1});
  CHECK(b.tensors[0].size == 1 + 1 * 6000 + 4 * 1100 + 15 * 68 + 3 * 17 + 15);
  j["tensors"][0]["strides"] = spec::Json::array({0, 1024, 64, 16, 1});  // K and V alias: zero stride
  j["tensors"][0]["size"] = 5000;
  b = bind_inline(dir, j, small_cache());
  CHECK(b.tensors[0].views[0].strides[0] == 0);
  CHECK(b.tensors[0].size == 5000);
}

TEST_CASE("parameter overrides rebind a layout parameter or a cache-shape parameter", "[layout][bind]") {
  TempDir dir;
  auto b = bind_inline(dir, flash_nhd_declaration(), small_cache(), {{"block_size", 32}, {"num_tokens", 64}});
  CHECK(b.values.at("block_size") == 32);
  CHECK(b.values.at("num_blocks") == 2);
  CHECK(b.coord_extents[2] == 64);
  CHECK_THROWS_WITH(bind_inline(dir, flash_nhd_declaration(), small_cache(), {{"blocksize", 32}}),
                    Catch::Contains("--param blocksize") && Catch::Contains("block_size"));
}

TEST_CASE("a failed requirement or a parameter the cache lacks is a misfit, not an error", "[layout][bind]") {
  TempDir dir;
  auto j = flash_nhd_declaration();
  j["requires"] = spec::Json::array({"head_size == 128", "block_size % 16 == 0"});
  auto b = bind_inline(dir, j, small_cache());
  REQUIRE_FALSE(b.fits());
  REQUIRE(b.misfits.size() == 1);
  CHECK(b.misfits[0].path == "/requires/0");
  CHECK_THAT(b.misfits[0].what, Catch::Contains("`head_size == 128` is false (head_size = 16)"));
  CHECK(b.tensors.empty());

  spec::CacheShape mla_only = small_cache();
  mla_only.name = "mla-only";
  mla_only.params.erase("num_kv_heads");
  b = bind_inline(dir, flash_nhd_declaration(), mla_only);
  REQUIRE_FALSE(b.fits());
  CHECK_THAT(b.misfits[0].what, Catch::Contains("has no parameter num_kv_heads"));
  CHECK(b.misfits[0].path == "/content");  // kv-heads reads it first: head < num_kv_heads
  auto rows = flash_nhd_declaration();
  rows["content"] = "rows";
  rows["coords"] = spec::Json{{"layer", "num_layers"}, {"kv", 2}, {"token", "num_tokens"}, {"head", 4}, {"dim", "head_size"}};
  rows["tensors"][0]["shape"][3] = "num_kv_heads";
  b = bind_inline(dir, rows, mla_only);
  REQUIRE_FALSE(b.fits());
  CHECK(b.misfits[0].path == "/tensors/0/shape/3");  // the first expression that reads it
}

namespace {
void expect_bind_error(const spec::Json& j, const std::string& path, const std::string& part) {
  TempDir dir;
  try {
    bind_inline(dir, j, small_cache());
    FAIL("bound without error");
  } catch (const spec::SpecError& e) {
    INFO(e.what());
    CHECK(e.path == path);
    CHECK_THAT(e.what(), Catch::Contains(part));
  }
}
}  // namespace

TEST_CASE("error catalogue: division by zero, overflow, zero or negative extents, impossible tables", "[layout][bind][errors]") {
  auto j = flash_nhd_declaration();
  j["params"]["x"] = 0;
  j["tensors"][0]["shape"][4] = "head_size / x";
  expect_bind_error(j, "/tensors/0/shape/4", "division by zero");

  j = flash_nhd_declaration();
  j["params"]["block_size"] = "num_tokens * 4611686018427387904";
  expect_bind_error(j, "/params/block_size", "64-bit overflow");

  j = flash_nhd_declaration();
  j["tensors"][0]["shape"][3] = "num_kv_heads * 1000000000000";
  j["tensors"][0]["shape"][4] = "head_size * 1000000000";
  expect_bind_error(j, "/tensors/0/shape", "overflow");

  j = flash_nhd_declaration();
  j["tensors"][0]["shape"][4] = "head_size - 16";
  expect_bind_error(j, "/tensors/0/shape/4", "is 0");
  j["tensors"][0]["shape"][4] = "head_size - 20";
  expect_bind_error(j, "/tensors/0/shape/4", "is -4");

  j = flash_nhd_declaration();
  j["tables"]["block_table"]["range"] = "num_blocks - 1";
  expect_bind_error(j, "/tables/block_table", "a table of 5 entries into the range [0, 4)");

  TempDir dir;
  CHECK_THROWS_WITH(bind_inline(dir, flash_nhd_declaration(), small_cache(), {{"num_tokens", 1LL << 40}}),
                    Catch::Contains("/tables/block_table") && Catch::Contains("fit in int32"));

  j = flash_nhd_declaration();
  j["tensors"][0]["strides"] = spec::Json::array({1, 1, 1, -1, 1});
  expect_bind_error(j, "/tensors/0/strides/3", "a stride >= 0");
}

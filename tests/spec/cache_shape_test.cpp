#include <catch2/catch.hpp>

#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::spec::SpecError;

TEST_CASE("every shipped cache shape loads and binds the sizes the issue names", "[spec][cache]") {
  kvlayout::spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto load = [&](const std::string& name) { return kvlayout::spec::load_cache(catalog.find_cache(name).string()); };
  auto small = load("small");
  CHECK(small.synthetic);
  CHECK(*small.get("num_kv_heads") % 2 == 0);
  for (std::int64_t block : {16, 32, 64}) CHECK(*small.get("num_tokens") % block != 0);
  CHECK(*small.get("kv_lora_rank") + *small.get("qk_rope_head_dim") == 576);

  auto qwen = load("qwen2.5-7b");
  CHECK(*qwen.get("num_layers") == 28);
  CHECK(*qwen.get("num_kv_heads") == 4);
  CHECK(*qwen.get("num_tokens") == 100003);
  for (std::int64_t block : {1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8, 3, 7, 11})
    CHECK(*qwen.get("num_tokens") % block != 0);
  CHECK(*load("llama-3.1-8b").get("num_tokens") == 131072);
  CHECK(*load("llama-3.1-70b").get("num_layers") == 80);
  CHECK(*load("mistral-7b").get("num_tokens") == 32768);
  auto ds = load("deepseek-v3");
  CHECK(*ds.get("num_layers") == 61);
  CHECK(*ds.get("kv_lora_rank") == 512);
  CHECK_FALSE(ds.get("num_kv_heads").has_value());
  for (const auto& name : {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-1.5b", "mistral-7b", "deepseek-v3"}) {
    auto c = load(name);
    REQUIRE(c.cite.has_value());
    CHECK_THAT(c.cite->path, Catch::Contains("config"));
  }
}

TEST_CASE("a cache shape with an unknown or non-positive parameter is rejected", "[spec][cache][errors]") {
  kvlayout::test::TempDir dir;
  auto file = dir.write("c.json", R"J({"name": "c", "synthetic": true, "params": {"num_layer": 2}})J");
  CHECK_THROWS_WITH(kvlayout::spec::load_cache(file), Catch::Contains("/params/num_layer") &&
                                                          Catch::Contains("unknown cache-shape parameter"));
  file = dir.write("c.json", R"J({"name": "c", "synthetic": true, "params": {"num_layers": 0}})J");
  CHECK_THROWS_WITH(kvlayout::spec::load_cache(file), Catch::Contains("/params/num_layers") &&
                                                          Catch::Contains("a positive integer"));
  file = dir.write("c.json", R"J({"name": "c", "params": {"num_layers": 2}})J");
  CHECK_THROWS_WITH(kvlayout::spec::load_cache(file), Catch::Contains("no \"cite\""));
}

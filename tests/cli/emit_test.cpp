#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout emit refuses pairs that are not exact or a subset, printing grade and reason", "[cli][emit]") {
  auto refused = run_kvlayout("emit vllm-flash-nhd-tp2-r0 vllm-flash-nhd --cache small --target cpu");
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK_THAT(refused.err, Catch::Contains("REFUSED [missing-positions]") && Catch::Contains("unblocked by: gather"));
  auto lossy = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-fp8 --cache small --target cpu");
  CHECK(lossy.exit_code == 1);
  CHECK_THAT(lossy.err, Catch::Contains("NOT_EXACT [lossy-values]") && Catch::Contains("--allow-not-exact"));
  auto allowed = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-fp8 --cache small --target cpu --allow-not-exact");
  CHECK(allowed.exit_code == 0);
  CHECK_THAT(allowed.out, Catch::Contains("NOT EXACT    emitted with --allow-not-exact") && Catch::Contains("kv_convert"));
  auto subset = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-tp2-r0 --cache small --target cuda");
  CHECK(subset.exit_code == 0);
  CHECK_THAT(subset.out, Catch::Contains("__global__"));
}

TEST_CASE("kvlayout emit writes -o FILE and rejects bad flags with exit 2", "[cli][emit]") {
  kvlayout::test::TempDir dir;
  std::string out = (dir.path() / "k.cpp").string();
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --name my_move -o '" + out + "'").exit_code == 0);
  auto compiled = kvlayout::test::run_command("g++ -std=c++17 -fsyntax-only '" + out + "'");
  CHECK(compiled.exit_code == 0);
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small").exit_code == 2);
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target tpu").exit_code == 2);
  auto name = run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --name 'a-b'");
  CHECK(name.exit_code == 2);
  CHECK_THAT(name.err, Catch::Contains("--name") && Catch::Contains("a C identifier"));
  CHECK(run_kvlayout("emit --help").exit_code == 0);
}

TEST_CASE("kvlayout emit --json gives the proof, the kernel and its ABI as data, matching the header", "[cli][emit][abi]") {
  auto r = run_kvlayout("emit vllm-flash-nhd sglang-mha --cache small --target cpu --name move_it --json");
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["proof"]["grade"] == "EXACT_TOKEN");
  const std::string kernel = doc["kernel"].get<std::string>();
  CHECK_THAT(kernel, Catch::Contains("extern \"C\" int move_it("));
  const auto& abi = doc["abi"];
  CHECK(abi["function"] == "move_it");
  CHECK(abi["target"] == "cpu");
  CHECK(abi["max_tokens"] == 67);
  // vllm-flash-nhd on small: per layer one kv_cache of (2, 5 blocks, 16, 4 heads, 16) bf16 elements.
  REQUIRE(abi["source"]["buffers"].size() == 2);
  CHECK(abi["source"]["buffers"][1]["tensor"] == "kv_cache");
  CHECK(abi["source"]["buffers"][1]["per"] == "layer");
  CHECK(abi["source"]["buffers"][1]["per_value"] == 1);
  CHECK(abi["source"]["buffers"][1]["elements"] == 2 * 5 * 16 * 4 * 16);
  CHECK(abi["source"]["buffers"][1]["bytes"] == 2 * 2 * 5 * 16 * 4 * 16);
  CHECK(abi["source"]["tables"][0] == nlohmann::json({{"pointer", 0}, {"name", "block_table"}, {"length", 5}, {"first", 0}, {"end", 5}}));
  // sglang-mha: k_buffer for layers 0..1, then v_buffer; page_table entries in [1, 68).
  REQUIRE(abi["destination"]["buffers"].size() == 4);
  CHECK(abi["destination"]["buffers"][2]["tensor"] == "v_buffer");
  CHECK(abi["destination"]["buffers"][2]["pointer"] == 2);
  CHECK(abi["destination"]["buffers"][2]["elements"] == 68 * 4 * 16);
  CHECK(abi["destination"]["tables"][0]["first"] == 1);
  CHECK(abi["destination"]["tables"][0]["end"] == 68);
  CHECK(abi["return_codes"].size() == 6);
  // The header prints the same facts (one home: emit/abi.hpp).
  CHECK_THAT(kernel, Catch::Contains("dst[2..3]  v_buffer for layer 0..1: 4352 elements of bf16 each"));
  CHECK_THAT(kernel, Catch::Contains("src_tables[0]  block_table: int32 entries in [0, 5)"));
  CHECK_THAT(kernel, Catch::Contains("5 two entries of one table hold the same block"));
}

TEST_CASE("kvlayout emit --json prints the proof of a refused pair with no kernel", "[cli][emit][abi]") {
  auto r = run_kvlayout("emit vllm-flash-nhd broken-collide --cache small --target cpu --json");
  CHECK(r.exit_code == 1);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["proof"]["grade"] == "REFUSED");
  CHECK(doc["kernel"].is_null());
  CHECK(doc["abi"].is_null());
  CHECK(run_kvlayout("emit vllm-flash-nhd-tp vllm-flash-nhd --cache small --target cpu --source-param tp_size=2 --json").exit_code == 2);
}

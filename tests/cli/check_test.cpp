// kvlayout check REAL ASSUMED: exit codes, --json fields, the inline offset form, --scope, and the planted
// defects at production size through the CLI.
#include <catch2/catch.hpp>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

namespace {

const std::string kData = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/refinement/";
// FlashInfer NHD on llama-3.1-70b (8 KV heads of 128): page p at p * 2 * 16 * 1024, K/V inside the page.
const std::string kPageFirst =
    "'kv_indices[token / 16] * 2 * 16 * 1024 + kv * 16 * 1024 + token % 16 * 1024 + head * 128 + dim'";
const std::string kKvFirst =
    "'kv * num_pages * 16 * 1024 + kv_indices[token / 16] * 16 * 1024 + token % 16 * 1024 + head * 128 + dim'";

}  // namespace

TEST_CASE("kvlayout check (a) at production size: K/V-first over blocks-first is WRONG_MAPPING naming what REAL stores",
          "[cli][check]") {
  auto r = run_kvlayout("check flashinfer-nhd " + kData + "kv-first-over-flashinfer.json --cache llama-3.1-70b");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("WRONG_MAPPING"));
  CHECK_THAT(r.out, Catch::Contains("where REAL stores (layer 0, V,"));
  auto ok = run_kvlayout("check flashinfer-nhd " + kData + "blocks-first-over-flashinfer.json --cache llama-3.1-70b");
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("OK"));
  // The same as offset formulas.
  auto wrong = run_kvlayout("check flashinfer-nhd --cache llama-3.1-70b --assumed-offset " + kKvFirst);
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.out, Catch::Contains("WRONG_MAPPING"));
  CHECK(run_kvlayout("check flashinfer-nhd --cache llama-3.1-70b --assumed-offset " + kPageFirst).exit_code == 0);
}

TEST_CASE("kvlayout check (b) at production size: HND slice of an NHD page", "[cli][check]") {
  auto r = run_kvlayout("check vllm-flash-nhd " + kData + "hnd-slice-over-vllm-nhd.json --cache llama-3.1-70b --json");
  REQUIRE(r.exit_code == 1);
  Json j = Json::parse(r.out);
  for (const char* f : {"verdict", "message", "counterexample", "obligations"}) CHECK(j.contains(f));
  CHECK(j["verdict"] == "WRONG_MAPPING");
  for (const char* f : {"assumed", "real", "stored"}) CHECK(j["counterexample"].contains(f));
  CHECK(j["counterexample"]["stored"].contains("position"));
  CHECK(j["counterexample"]["assumed"]["element"] == j["counterexample"]["stored"]["element"]);
  CHECK(j["counterexample"]["assumed"]["element"] != j["counterexample"]["real"]["element"]);
  std::vector<std::string> order;
  for (const auto& o : j["obligations"]) order.push_back(o["name"]);
  CHECK(order == std::vector<std::string>{"content", "tables", "value", "defined", "in-bounds", "refines"});
  CHECK(run_kvlayout("check vllm-flash-nhd " + kData + "nhd-slice-over-vllm-nhd.json --cache llama-3.1-70b").exit_code == 0);
}

TEST_CASE("kvlayout check --scope, VALUE_CHANGE, OUT_OF_BOUNDS", "[cli][check]") {
  auto u = run_kvlayout("check vllm-flash-nhd " + kData + "nhd-slice-over-vllm-nhd.json --cache small --scope 'head >= 0' --json");
  REQUIRE(u.exit_code == 1);
  Json j = Json::parse(u.out);
  CHECK(j["verdict"] == "UNCOVERED");
  CHECK(j["counterexample"]["count"] == 2 * 2 * 67 * 2 * 16);
  CHECK(run_kvlayout("check vllm-flash-nhd " + kData + "nhd-slice-over-vllm-nhd.json --cache small --scope 'head < 2'")
            .exit_code == 0);
  auto v = run_kvlayout("check vllm-flash-nhd " + kData + "fp8-over-vllm-nhd.json --cache small");
  CHECK(v.exit_code == 1);
  CHECK_THAT(v.out, Catch::Contains("VALUE_CHANGE"));
  auto o = run_kvlayout("check vllm-flash-nhd --cache llama-3.1-70b --assumed-offset "
                        "'kv * num_blocks * 2 * 16 * 1024 + block_table[token / 16] * 16 * 1024 + dim' --json");
  REQUIRE(o.exit_code == 1);
  Json oj = Json::parse(o.out);
  CHECK(oj["verdict"] == "OUT_OF_BOUNDS");
  CHECK(oj["counterexample"]["stored"]["past_allocation"] == true);
}

TEST_CASE("kvlayout check bad input and help", "[cli][check]") {
  CHECK(run_kvlayout("check --help").exit_code == 0);
  CHECK_THAT(run_kvlayout("check --help").out, Catch::Contains("GEOMETRY_MISMATCH"));
  CHECK(run_kvlayout("check vllm-flash-nhd --cache small").exit_code == 2);
  CHECK(run_kvlayout("check vllm-flash-nhd vllm-mla --cache small").exit_code == 2);
  CHECK(run_kvlayout("check vllm-flash-nhd " + kData + "unknown-table-over-vllm-nhd.json --cache small").exit_code == 2);
  auto t = run_kvlayout("check vllm-flash-nhd --cache small --assumed-offset 'kv + nope'");
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Catch::Contains("--assumed-offset"));
  CHECK(run_kvlayout("check sglang-mha --cache small --assumed-offset 'dim'").exit_code == 2);  // two tensors, none named
  CHECK(run_kvlayout("check sglang-mha --cache small --assumed-offset 'dim' --assumed-tensor k_buffer "
                     "--assumed-holds 'kv == 0' --assumed-instance layer")
            .exit_code == 1);
  CHECK(run_kvlayout("check vllm-flash-nhd --cache small --assumed-tensor kv_cache").exit_code == 2);
  CHECK(run_kvlayout("check vllm-flash-nhd vllm-flash-nhd --cache small --scope 'hed < 1'").exit_code == 2);
  CHECK(run_kvlayout("check vllm-flash-nhd vllm-flash-hnd --cache small --limit-ms 1").exit_code != 0);
}

TEST_CASE("kvlayout check --tensors: geometry alone, and before the refinement", "[cli][check]") {
  const std::string geometry = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/geometry/";
  CHECK(run_kvlayout("check vllm-flash-nhd --cache small --tensors " + geometry + "flash-nhd-small.json").exit_code == 0);
  auto bad = run_kvlayout("check vllm-flash-nhd --cache small --tensors " + geometry + "flash-nhd-small-padded.json");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.out, Catch::Contains("GEOMETRY_MISMATCH"));
  // With ASSUMED: the geometry step comes first; a mismatch is the verdict, else the refinement decides.
  auto both = run_kvlayout("check vllm-flash-nhd " + kData + "hnd-slice-over-vllm-nhd.json --cache small --json --tensors " +
                           geometry + "flash-nhd-small.json");
  REQUIRE(both.exit_code == 1);
  Json j = Json::parse(both.out);
  CHECK(j["verdict"] == "WRONG_MAPPING");
  CHECK(j["obligations"][0]["name"] == "geometry");
  auto first = run_kvlayout("check vllm-flash-nhd " + kData + "nhd-slice-over-vllm-nhd.json --cache small --json --tensors " +
                            geometry + "flash-nhd-small-padded.json");
  REQUIRE(first.exit_code == 1);
  CHECK(Json::parse(first.out)["verdict"] == "GEOMETRY_MISMATCH");
  CHECK(run_kvlayout("check vllm-flash-nhd --cache small --tensors " + geometry + "flash-nhd-small.json --scope 'head < 1'")
            .exit_code == 2);
}

TEST_CASE("kvlayout check: a solver limit is UNKNOWN (exit 3), never OK", "[cli][check]") {
  // Wrong only where token^3 + 5 is divisible by 7919: nonlinear, beyond the solver in 20 ms.
  auto r = run_kvlayout("check vllm-flash-nhd --cache llama-3.1-70b --limit-ms 20 --json --assumed-offset "
                        "'kv * num_blocks * 16 * 1024 + block_table[token / 16] * 16 * 1024 + token % 16 * 1024 + "
                        "head * 128 + dim + max(0, 1 - (token * token * token + 5) % 7919)'");
  REQUIRE(r.exit_code == 3);
  Json j = Json::parse(r.out);
  CHECK(j["verdict"] == "UNKNOWN");
  CHECK(j["counterexample"].is_null());
}

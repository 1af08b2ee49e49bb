// kvlayout prove on rank families: the contract (tp 1 -> 2 on llama-3.1-70b is EXACT_BYTE with
// "assignment" in --json), exit codes, and bad input naming what was wrong.
#include <catch2/catch.hpp>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout prove on groups: EXACT_BYTE with the assignment in --json", "[cli][prove][group]") {
  auto r = run_kvlayout(
      "prove vllm-flash-nhd-tp vllm-flash-nhd-tp --cache llama-3.1-70b --source-param tp_size=1 --target-param tp_size=2 --json");
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["grade"] == "EXACT_BYTE");
  REQUIRE(j["assignment"].size() == 2);
  for (int q = 0; q < 2; ++q) {
    const Json& a = j["assignment"][q];
    CHECK(a["target_rank"] == q);
    CHECK(a["source_rank"] == 0);
    CHECK(a["heads"] == Json::array({4 * q, 4 * q + 4}));
    CHECK(a["layers"] == Json::array({0, 80}));
  }
  CHECK(j["source_group"]["sizes"]["tp_size"] == 1);
  CHECK(j["target_group"]["sizes"]["tp_size"] == 2);
  CHECK(j["target_group"]["instances"].size() == 2);
}

TEST_CASE("kvlayout prove on groups: text report, --param for both sides, whole -> group", "[cli][prove][group]") {
  auto r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd-tp --cache llama-3.1-70b --source-param tp_size=4 --target-param tp_size=2");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("vllm-flash-nhd-tp (tp_size=4) -> vllm-flash-nhd-tp (tp_size=2) on llama-3.1-70b: EXACT_BYTE"));
  CHECK_THAT(r.out, Catch::Contains("target rank 1, heads 4..5, layers 0..79 <- source rank 2, heads 4..5, layers 0..79"));
  // --param binds both sides: tp_size 4 -> 4.
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd-tp --cache llama-3.1-70b --param tp_size=4 --json");
  REQUIRE(r.exit_code == 0);
  CHECK(Json::parse(r.out)["assignment"].size() == 4);
  r = run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd-tp --cache llama-3.1-70b --target-param tp_size=16");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("target rank 15, head 7, layers 0..79 <- source, head 7, layers 0..79"));
  // The thin rank files still name one instance: whole -> rank 0 is SUBSET, as before.
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd-tp2-r0 --cache llama-3.1-70b").exit_code == 1);
}

TEST_CASE("kvlayout prove on groups: bad input is exit 2 naming the parameter", "[cli][prove][group]") {
  auto r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd-tp --cache small --source-param tp_sise=2");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("tp_sise"));
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --source-param tp_rank=1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("tp_rank"));
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --param tp_rank=1");
  CHECK(r.exit_code == 2);
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --source-param tp_size=0");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("tp_size"));
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --source-param tp_size=100000");
  CHECK(r.exit_code == 2);
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --source-param tp_size=two");
  CHECK(r.exit_code == 2);
  // tp_size 3 does not divide 4 KV heads: a requirement fails, REFUSED (exit 1) naming the rank.
  r = run_kvlayout("prove vllm-flash-nhd-tp vllm-flash-nhd --cache small --source-param tp_size=3");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("source rank 0"));
}

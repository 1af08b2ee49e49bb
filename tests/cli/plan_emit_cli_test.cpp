// kvlayout plan emit: the three formats, each fed back to kvlayout plan check (exit 0), the refusal of a
// pair that is not exact (exit 1), bad flags (exit 2), --table and --scope, and a families plan from
// tests/data checked through the CLI at production size.
#include <catch2/catch.hpp>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

namespace {

const std::string kData = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/families/";
const std::string kPair = "vllm-flash-nhd vllm-flashinfer-hnd";

}  // namespace

TEST_CASE("plan emit: each format is valid input to plan check", "[cli][plan-emit-cli]") {
  kvlayout::test::TempDir dir;
  for (const char* format : {"families", "runs", "descriptors"}) {
    auto e = run_kvlayout("plan emit " + kPair + " --cache small --format " + format + " --json");
    INFO(format << ": " << e.err);
    REQUIRE(e.exit_code == 0);
    Json plan = Json::parse(e.out);
    CHECK(plan["form"] == (std::string(format) == "families" ? "families" : "descriptors"));
    const std::string file = dir.write(std::string(format) + ".json", e.out);
    auto c = run_kvlayout("plan check " + kPair + " --cache small --plan " + file + " --json");
    INFO(c.out << c.err);
    REQUIRE(c.exit_code == 0);
    CHECK(Json::parse(c.out)["verdict"] == "OK");
  }
}

TEST_CASE("plan emit: summary on stderr without --json, tables and scope", "[cli][plan-emit-cli]") {
  auto e = run_kvlayout("plan emit " + kPair + " --cache small --format runs --table source.block_table=4,3,2,1,0");
  REQUIRE(e.exit_code == 0);
  CHECK_THAT(e.err, Catch::Contains("runs per side"));
  Json plan = Json::parse(e.out);
  CHECK(plan["tables"]["source.block_table"] == Json::array({4, 3, 2, 1, 0}));
  kvlayout::test::TempDir dir;
  auto c = run_kvlayout("plan check " + kPair + " --cache small --plan " + dir.write("p.json", e.out));
  CHECK(c.exit_code == 0);
  auto based = run_kvlayout("plan emit " + kPair + " --cache small --format descriptors --base target=0x7e0000000000 --json");
  REQUIRE(based.exit_code == 0);
  Json bp = Json::parse(based.out);
  CHECK(bp["target_regions"][0]["base"] == std::int64_t{0x7e0000000000});
  CHECK(run_kvlayout("plan check " + kPair + " --cache small --plan " + dir.write("b.json", based.out)).exit_code == 0);
  CHECK(run_kvlayout("plan emit " + kPair + " --cache small --base target=-1").exit_code == 2);
  auto s = run_kvlayout("plan emit " + kPair + " --cache small --scope 'token < 16' --json");
  REQUIRE(s.exit_code == 0);
  CHECK(Json::parse(s.out)["scope"] == "token < 16");
}

TEST_CASE("plan emit: refusals and bad input", "[cli][plan-emit-cli]") {
  auto refused = run_kvlayout("plan emit vllm-flash-nhd-tp2-r1 vllm-flash-nhd --cache small");
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("refused"));
  CHECK(run_kvlayout("plan emit " + kPair + " --cache small --format csv").exit_code == 2);
  CHECK(run_kvlayout("plan emit " + kPair + " --cache small --table block_table=0,1").exit_code == 2);
  CHECK(run_kvlayout("plan emit " + kPair + " --cache small --table source.block_table=0,0,1,2,3").exit_code == 2);
  CHECK(run_kvlayout("plan emit " + kPair + " --cache small --scope 'token * head < 3'").exit_code == 2);
  CHECK(run_kvlayout("plan emit vllm-flash-nhd --cache small").exit_code == 2);
  auto help = run_kvlayout("plan emit --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--format"));
}

TEST_CASE("plan check: a families plan at production size through the CLI", "[cli][plan-emit-cli]") {
  auto ok = run_kvlayout("plan check vllm-flashinfer-hnd vllm-flashinfer-hnd --cache llama-3.1-70b --plan " + kData +
                         "kv_blocks_ok.json --json");
  INFO(ok.out << ok.err);
  REQUIRE(ok.exit_code == 0);
  Json r = Json::parse(ok.out);
  CHECK(r["verdict"] == "OK");
  CHECK(r["checked"]["bytes"] == std::int64_t{80} * 8192 * 65536);
  auto bad = run_kvlayout("plan check vllm-flashinfer-hnd vllm-flashinfer-hnd --cache llama-3.1-70b --plan " + kData + "off_by_one.json");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.out, Catch::Contains("WRONG_MAPPING"));
}

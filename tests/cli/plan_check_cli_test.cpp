// kvlayout plan check at the command line: exit codes, --json's keys, --help, bad input, on the plans in
// tests/data/check/plans (see its README.md).
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::test::run_kvlayout;

namespace {
const std::string kPlans = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/plans/";
std::string plan_check(const std::string& plan, const std::string& extra = "") {
  return "plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small --plan " + kPlans + plan + " " + extra;
}
}  // namespace

TEST_CASE("plan check CLI: verdicts and exit codes", "[check][plan][cli]") {
  struct Row {
    const char* plan;
    const char* verdict;
    int exit;
  };
  for (const Row& row : {Row{"per_block_ok.json", "OK", 0}, Row{"per_block_off_by_one.json", "WRONG_MAPPING", 1},
                         Row{"per_block_neighbour.json", "FRAME_VIOLATION", 1}, Row{"per_block_no_last_block.json", "UNCOVERED", 1},
                         Row{"slots_block_ok.json", "OK", 0}, Row{"slots_block_reused.json", "ALIASED", 1}}) {
    INFO(row.plan);
    const auto text = run_kvlayout(plan_check(row.plan));
    CHECK(text.exit_code == row.exit);
    CHECK(text.out.find(std::string(": ") + row.verdict + "  ") != std::string::npos);
    const auto json = run_kvlayout(plan_check(row.plan, "--json"));
    REQUIRE(json.exit_code == row.exit);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j["verdict"] == row.verdict);
    for (const char* key : {"message", "counterexample", "checked", "ms"}) CHECK(j.contains(key));
    CHECK(j["checked"]["descriptors"].get<std::int64_t>() > 0);
    CHECK(j["counterexample"].is_null() == (row.exit == 0));
  }
}

TEST_CASE("plan check CLI: bad input exits 2 naming the plan path", "[check][plan][cli]") {
  auto r = run_kvlayout(plan_check("per_block_bad_length.json"));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("/target_descriptors/2") != std::string::npos);
  CHECK(run_kvlayout(plan_check("no_such_plan.json")).exit_code == 2);
  CHECK(run_kvlayout("plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small").exit_code == 2);  // no --plan
  CHECK(run_kvlayout(plan_check("per_block_ok.json", "--param num_tokens=0")).exit_code == 2);
}

TEST_CASE("plan check CLI: --help lists the forms and every verdict", "[check][plan][cli]") {
  auto r = run_kvlayout("plan check --help");
  CHECK(r.exit_code == 0);
  for (const char* word : {"descriptors", "slots", "families", "OK", "WRONG_MAPPING", "UNCOVERED", "ALIASED", "OUT_OF_BOUNDS",
                           "FRAME_VIOLATION", "VALUE_CHANGE", "UNKNOWN"})
    CHECK(r.out.find(word) != std::string::npos);
}

TEST_CASE("plan check CLI: unknown top-level members are ignored with a warning naming file and path", "[check][plan][cli]") {
  kvlayout::test::TempDir dir;
  for (const char* name : {"slots_block_ok.json", "per_block_ok.json"}) {
    INFO(name);
    std::ifstream slots_in(kPlans + name);
    nlohmann::json extra = nlohmann::json::parse(slots_in);
    extra["schema"] = "kvlayout-plan/1";
    const auto r = run_kvlayout("plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small --plan " +
                                dir.write(std::string("extra-") + name, extra.dump()) + " --json");
    CHECK(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["verdict"] == "OK");
    CHECK(r.err.find(std::string("extra-") + name + ": /schema: ignoring an unknown top-level member") != std::string::npos);
  }
  std::ifstream in(kPlans + "per_block_ok.json");
  nlohmann::json plan = nlohmann::json::parse(in);
  // Inside an entry a typo is still bad input.
  plan["source_regions"][0]["bse"] = 0;
  const auto bad = run_kvlayout("plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small --plan " + dir.write("typo.json", plan.dump()));
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/source_regions/0/bse") != std::string::npos);
}

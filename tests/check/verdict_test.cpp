// The verdict table is the one home of the verdict codes: distinct codes, the exit codes the issue fixes,
// and the README's table equal to it row by row.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "check/result.hpp"
#include "check/verdict.hpp"

using namespace kvlayout;

TEST_CASE("verdict codes are distinct and map to the issue's exit codes", "[check][verdict]") {
  std::set<std::string> codes;
  for (const auto& row : check::verdict_table()) {
    CHECK(codes.insert(row.code).second);
    CHECK(&check::info(row.verdict) == &row);
  }
  CHECK(codes.size() == 9);
  CHECK(check::exit_code(check::Verdict::Ok) == 0);
  CHECK(check::exit_code(check::Verdict::Unknown) == 3);
  for (auto v : {check::Verdict::WrongMapping, check::Verdict::Uncovered, check::Verdict::Aliased,
                 check::Verdict::OutOfBounds, check::Verdict::FrameViolation, check::Verdict::ValueChange,
                 check::Verdict::GeometryMismatch})
    CHECK(check::exit_code(v) == 1);
}

TEST_CASE("the README lists every verdict with its meaning from the table", "[check][verdict]") {
  std::ifstream in(std::string(KVLAYOUT_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& row : check::verdict_table()) {
    INFO(row.code);
    CHECK(text.str().find("| `" + std::string(row.code) + "` | " + row.meaning + " |") != std::string::npos);
  }
}

TEST_CASE("a check result prints the issue's JSON members", "[check][verdict]") {
  check::CheckResult plan;
  plan.verdict = check::Verdict::Uncovered;
  plan.message = "3 positions in scope are never written";
  plan.counterexample = {{"count", 3}};
  plan.checked_descriptors = 10;
  plan.checked_bytes = 4096;
  nlohmann::json j = check::to_json(plan);
  CHECK(j["verdict"] == "UNCOVERED");
  CHECK(j["message"] == plan.message);
  CHECK(j["counterexample"]["count"] == 3);
  CHECK(j["checked"]["descriptors"] == 10);
  CHECK(j["checked"]["bytes"] == 4096);
  CHECK(j.contains("ms"));

  check::CheckResult refinement;
  refinement.steps.push_back({"refines", "proved", "", 1.5});
  nlohmann::json r = check::to_json(refinement);
  CHECK(r["verdict"] == "OK");
  CHECK(r["counterexample"].is_null());
  CHECK(r["obligations"][0]["name"] == "refines");
  CHECK(check::format_text(refinement, "check a ⊑ b").find("refines") != std::string::npos);
}

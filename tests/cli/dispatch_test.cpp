// cli::run_captured: the commands in-process (what the Python package runs) print what the executable
// prints, report bad input as a structured SpecError, and leave the standard streams as they found them.
#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/dispatch.hpp"
#include "support/run_command.hpp"

using kvlayout::cli::run_captured;

namespace {

nlohmann::json without_timings(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("ms");
    for (auto& [k, v] : j.items()) v = without_timings(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_timings(v);
  }
  return j;
}

}  // namespace

TEST_CASE("run_captured prints what the kvlayout executable prints, with its exit code", "[cli][dispatch]") {
  const std::string specs = KVLAYOUT_SPECS_DIR;
  auto in_process = run_captured({"prove", "vllm-flash-nhd", "broken-collide", "--cache", "small", "--json", "--specs", specs});
  auto executable = kvlayout::test::run_kvlayout("prove vllm-flash-nhd broken-collide --cache small --json --specs " + specs);
  CHECK(in_process.exit_code == 1);
  CHECK(in_process.exit_code == executable.exit_code);
  CHECK(without_timings(nlohmann::json::parse(in_process.out)) == without_timings(nlohmann::json::parse(executable.out)));
  CHECK_FALSE(in_process.error);
  auto version = run_captured({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("kvlayout "));
}

TEST_CASE("run_captured reports bad input as the SpecError the CLI prints, and restores the streams", "[cli][dispatch]") {
  std::ostringstream outside;
  auto* saved = std::cout.rdbuf(outside.rdbuf());
  auto bad = run_captured({"prove", "vllm-flash-nhd", "no-such-layout", "--cache", "small", "--specs", KVLAYOUT_SPECS_DIR});
  std::cout << "after";
  std::cout.rdbuf(saved);
  CHECK(outside.str() == "after");  // the command's output went to the capture, the stream came back
  CHECK(bad.exit_code == 2);
  REQUIRE(bad.error);
  CHECK_THAT(bad.error->found, Catch::Contains("no-such-layout"));
  CHECK_THAT(bad.error->expected, Catch::Contains("vllm-flash-nhd"));
  CHECK_THAT(bad.err, Catch::StartsWith("kvlayout prove: error: ") && Catch::Contains("no-such-layout"));
  auto unknown = run_captured({"frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK_FALSE(unknown.error);
  CHECK_THAT(unknown.err, Catch::Contains("unknown command"));
}

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "prove/prove_fixture.hpp"
#include "spec/json_node.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_command;
using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout prove exit codes: 0 exact, 1 subset/not exact/refused, 3 unknown, 2 bad input", "[cli][prove]") {
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache llama-3.1-70b").exit_code == 0);
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small").exit_code == 0);
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd-tp2-r0 --cache small").exit_code == 1);
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd-fp8 --cache small").exit_code == 1);
  CHECK(run_kvlayout("prove vllm-flash-nhd broken-collide --cache small").exit_code == 1);
  CHECK(run_kvlayout("prove vllm-flash-nhd broken-collide --cache llama-3.1-70b --limit-ms 1").exit_code == 3);
  auto bad = run_kvlayout("prove vllm-flash-nhd --cache small");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("1 layout argument(s)"));
  CHECK(run_kvlayout("prove vllm-flash-nhd nope --cache small").exit_code == 2);
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --limit-ms 0").exit_code == 2);
  CHECK(run_kvlayout("prove --help").exit_code == 0);
}

TEST_CASE("kvlayout prove --json has the documented fields", "[cli][prove]") {
  auto r = run_kvlayout("prove vllm-flash-nhd broken-collide --cache small --json");
  REQUIRE(r.exit_code == 1);
  Json j = Json::parse(r.out);
  for (const char* f : {"source", "target", "cache", "grade", "reason", "unblocked_by", "obligations"}) CHECK(j.contains(f));
  CHECK(j["grade"] == "REFUSED");
  CHECK(j["reason"]["code"] == "collision");
  CHECK(j["reason"]["message"].is_string());
  CHECK_THAT(j["unblocked_by"].get<std::string>(), Catch::Contains("broken-collide"));
  std::vector<std::string> order;
  for (const auto& o : j["obligations"]) {
    for (const char* f : {"name", "side", "status", "ms", "counterexample"}) CHECK(o.contains(f));
    std::string status = o["status"];
    CHECK((status == "proved" || status == "refuted" || status == "unknown"));
    order.push_back(o["name"]);
  }
  CHECK(order == std::vector<std::string>{"fits", "fits", "fits", "in-bounds", "in-bounds", "injective", "injective",
                                          "covers", "carries", "values", "padding"});
  // defined is a precondition, reported beside the obligations.
  REQUIRE(j["preconditions"].size() == 2);
  for (const auto& o : j["preconditions"]) {
    CHECK(o["name"] == "defined");
    CHECK(o["status"] == "proved");
  }
  const Json* injective = nullptr;
  for (const auto& o : j["obligations"])
    if (o["name"] == "injective" && o["side"] == "target") injective = &o;
  REQUIRE(injective);
  const Json& positions = (*injective)["counterexample"]["positions"];
  REQUIRE(positions.size() == 2);
  for (const auto& p : positions) {
    for (const char* c : {"layer", "kv", "token", "head", "dim"}) CHECK(p["coord"].contains(c));
    CHECK(p["tables"].is_object());
    for (const char* f : {"tensor", "instance", "offset"}) CHECK(p["target"].contains(f));
  }
  CHECK(positions[0]["target"]["offset"] == positions[1]["target"]["offset"]);

  auto fp8 = Json::parse(run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd-fp8 --cache small --json").out);
  for (const auto& o : fp8["obligations"]) {
    if (o["name"] != "values") continue;
    const Json& v = o["counterexample"]["value"];
    for (const char* f : {"source_type", "target_type", "source_bits", "round_trip_bits", "source_decimal", "round_trip_decimal"})
      CHECK(v.contains(f));
  }
  auto shard = Json::parse(run_kvlayout("prove vllm-flash-nhd-tp2-r0 vllm-flash-nhd --cache small --json").out);
  for (const auto& o : shard["obligations"])
    if (o["name"] == "covers") CHECK(o["counterexample"]["positions"][0]["source"] == Json{{"held", false}});
}

TEST_CASE("kvlayout prove prints the grade, the counterexample in named coordinates and the capability", "[cli][prove]") {
  auto r = run_kvlayout("prove vllm-flash-nhd-tp2-r0 vllm-flash-nhd --cache llama-3.1-70b");
  CHECK_THAT(r.out, Catch::StartsWith("vllm-flash-nhd-tp2-r0 -> vllm-flash-nhd on llama-3.1-70b: REFUSED  [missing-positions: covers(pair)]"));
  CHECK_THAT(r.out, Catch::Contains("(layer 0, K, token 0, head 4, dim 0)") && Catch::Contains("not held") &&
                        Catch::Contains("unblocked by: gather the other tensor-parallel ranks"));
}

TEST_CASE("smt-dir files carry each query with its expected answer, and the z3 command agrees", "[cli][prove][smt]") {
  kvlayout::test::TempDir dir;
  auto r = run_kvlayout("prove vllm-flash-nhd broken-collide --cache small --smt-dir '" + dir.path().string() + "'");
  REQUIRE(r.exit_code == 1);
  // More queries through the library with the normaliser off (every obligation then goes to the solver).
  kvlayout::prove::ProveOptions solver_only;
  solver_only.normalise = false;
  solver_only.smt_dir = (dir.path() / "solver-only").string();
  kvlayout::test::prove_named("vllm-paged-legacy", "vllm-flash-nhd-tp2-r1", "small", solver_only);

  int replayed = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.path().extension() != ".smt2") continue;
    std::ifstream in(entry.path());
    std::string line, expected, pair, obligation;
    while (std::getline(in, line) && line.rfind(";", 0) == 0) {
      if (line.rfind("; expected: ", 0) == 0) expected = line.substr(12);
      if (line.rfind("; pair: ", 0) == 0) pair = line.substr(8);
      if (line.rfind("; obligation: ", 0) == 0) obligation = line.substr(14);
    }
    INFO(entry.path().filename().string());
    CHECK_FALSE(pair.empty());
    CHECK_FALSE(obligation.empty());
    REQUIRE((expected == "sat" || expected == "unsat"));
    auto z3 = run_command("z3 -T:60 '" + entry.path().string() + "'");
    CHECK(z3.out.substr(0, z3.out.find('\n')) == expected);
    ++replayed;
  }
  CHECK(replayed >= 10);
}

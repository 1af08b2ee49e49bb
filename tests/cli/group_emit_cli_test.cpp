// kvlayout emit and plan emit for rank families: one kernel (or plan) per rank pair that exchanges data,
// the manifest's content, a group that is not exact refused as a pair is (exit 1, nothing written), and bad
// input (a --source-param naming no parameter, a group without -o DIR) exit 2 with the message.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

namespace {

const std::string kTp = "vllm-flash-nhd-tp vllm-flash-nhd-tp --cache small";

Json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  return Json::parse(in);
}

}  // namespace

TEST_CASE("emit: a group writes one kernel per rank pair and the manifest", "[cli][emit][group]") {
  kvlayout::test::TempDir dir;
  const std::string out = (dir.path() / "tp1to2").string();
  auto r = run_kvlayout("emit " + kTp + " --source-param tp_size=1 --target-param tp_size=2 --target cpu -o '" + out + "'");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("2 kernel(s)") && Catch::Contains("kvlayout_relayout_t1_from_s0.cpp") &&
                        Catch::Contains("target rank 1, heads 2..3, layers 0..1 <- source rank 0"));
  Json m = read_json(std::filesystem::path(out) / "group.json");
  CHECK(m["grade"] == "EXACT_TOKEN");
  CHECK(m["target"] == "cpu");
  CHECK(m["source_group"]["sizes"]["tp_size"] == 1);
  CHECK(m["target_group"]["instances"] == 2);
  REQUIRE(m["kernels"].size() == 2);
  const Json& k = m["kernels"][1];
  CHECK(k["target_rank"] == 1);
  CHECK(k["source_rank"] == 0);
  CHECK(k["target_ranks"]["tp_rank"] == 1);
  CHECK(k["heads"] == Json::array({2, 4}));
  CHECK(k["layers"] == Json::array({0, 2}));
  CHECK(k["function"] == "kvlayout_relayout_t1_from_s0");
  CHECK(k["file"] == "kvlayout_relayout_t1_from_s0.cpp");
  CHECK(k["source_layout"] == "vllm-flash-nhd-tp[tp_rank=0]");
  CHECK(k["target_layout"] == "vllm-flash-nhd-tp[tp_rank=1]");
  CHECK(k["piece"] == "vllm-flash-nhd-tp[tp_rank=1]<-[tp_rank=0]");
  for (const auto& kernel : m["kernels"]) {
    const std::string file = (std::filesystem::path(out) / kernel["file"].get<std::string>()).string();
    REQUIRE(std::filesystem::exists(file));
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Catch::Contains("extern \"C\" int " + kernel["function"].get<std::string>() + "("));
  }
  auto compiled = kvlayout::test::run_command("g++ -std=c++17 -fsyntax-only '" + out + "/kvlayout_relayout_t1_from_s0.cpp'");
  CHECK(compiled.exit_code == 0);
}

TEST_CASE("emit: replicated heads are fed by the lowest replica, named by rank, CUDA files .cu", "[cli][emit][group]") {
  kvlayout::test::TempDir dir;
  const std::string out = (dir.path() / "tp8to2").string();
  auto r = run_kvlayout("emit " + kTp + " --source-param tp_size=8 --target-param tp_size=2 --target cuda --name move -o '" + out + "'");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  Json m = read_json(std::filesystem::path(out) / "group.json");
  REQUIRE(m["kernels"].size() == 4);
  std::vector<std::pair<int, int>> pairs;
  for (const auto& k : m["kernels"]) pairs.emplace_back(k["target_rank"].get<int>(), k["source_rank"].get<int>());
  CHECK(pairs == std::vector<std::pair<int, int>>{{0, 0}, {0, 2}, {1, 4}, {1, 6}});
  CHECK(m["kernels"][3]["function"] == "move_t1_from_s6");
  CHECK(m["kernels"][3]["file"] == "move_t1_from_s6.cu");
  CHECK(m["kernels"][3]["heads"] == Json::array({3, 4}));
  CHECK(std::filesystem::exists(std::filesystem::path(out) / "move_t1_from_s6.cu"));
  // Every group kernel compiles with nvcc (when it is installed; running them needs a GPU, see [cuda]).
  if (kvlayout::test::run_command("command -v nvcc").exit_code != 0) {
    WARN("skipped compiling the group's CUDA kernels: nvcc is not on PATH");
    return;
  }
  for (const auto& k : m["kernels"]) {
    auto built = kvlayout::test::run_command("cd '" + out + "' && nvcc -std=c++17 -O2 -arch=sm_80 -c '" +
                                             k["file"].get<std::string>() + "' -o /dev/null 2>&1");
    INFO(k["file"] << ": " << built.out << built.err);
    CHECK(built.exit_code == 0);
  }
}

TEST_CASE("emit: a group that is not exact is refused as a pair is, and bad group input exits 2", "[cli][emit][group]") {
  kvlayout::test::TempDir dir;
  const std::string out = (dir.path() / "refused").string();
  // One rank's cache (a plain instance) cannot fill the whole TP 2 group.
  auto refused = run_kvlayout("emit vllm-flash-nhd-tp2-r0 vllm-flash-nhd-tp --cache small --target cpu -o '" + out + "'");
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK_THAT(refused.err, Catch::Contains("refused") && Catch::Contains("REFUSED [missing-positions]") &&
                              Catch::Contains("unblocked by"));
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(out) / "group.json"));
  auto lossy = run_kvlayout("emit vllm-flash-nhd-tp vllm-flash-nhd-fp8 --cache small --target cpu -o '" + out + "'");
  CHECK(lossy.exit_code == 1);
  CHECK_THAT(lossy.err, Catch::Contains("NOT_EXACT") && Catch::Contains("--allow-not-exact"));

  auto param = run_kvlayout("emit " + kTp + " --source-param nope=3 --target cpu -o '" + out + "'");
  CHECK(param.exit_code == 2);
  CHECK_THAT(param.err, Catch::Contains("no parameter \"nope\" in vllm-flash-nhd-tp"));
  auto no_dir = run_kvlayout("emit " + kTp + " --target cpu");
  CHECK(no_dir.exit_code == 2);
  CHECK_THAT(no_dir.err, Catch::Contains("-o DIR"));
  auto help = run_kvlayout("emit --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--source-param") && Catch::Contains("group.json") && Catch::Contains("_from_s"));
}

TEST_CASE("plan emit: a group prints one plan per rank pair", "[cli][plan-emit-cli][group]") {
  auto r = run_kvlayout("plan emit " + kTp + " --source-param tp_size=4 --target-param tp_size=2 --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Json g = Json::parse(r.out);
  CHECK(g["grade"] == "EXACT_TOKEN");
  REQUIRE(g["plans"].size() == 4);
  const Json& p = g["plans"][3];
  CHECK(p["target_rank"] == 1);
  CHECK(p["source_rank"] == 3);
  CHECK(p["heads"] == Json::array({3, 4}));
  CHECK(p["source_layout"] == "vllm-flash-nhd-tp[tp_rank=3]");
  CHECK(p["plan"]["form"] == "families");
  CHECK(p["plan"]["families"].size() > 0);
  auto d = run_kvlayout("plan emit " + kTp + " --source-param tp_size=1 --target-param tp_size=2 --format descriptors "
                        "--table source.block_table=4,3,2,1,0");
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK_THAT(d.err, Catch::Contains("2 rank pair(s)"));
  Json dg = Json::parse(d.out);
  REQUIRE(dg["plans"].size() == 2);
  for (const auto& plan : dg["plans"]) {
    CHECK(plan["plan"]["tables"]["source.block_table"] == Json::array({4, 3, 2, 1, 0}));
    CHECK(plan["plan"]["source_descriptors"].size() > 0);
  }
  auto refused = run_kvlayout("plan emit vllm-flash-nhd-tp2-r0 vllm-flash-nhd-tp --cache small");
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains("refused"));
  CHECK(run_kvlayout("plan emit " + kTp + " --target-param nope=1").exit_code == 2);
  auto help = run_kvlayout("plan emit --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--source-param") && Catch::Contains("one plan is printed per rank pair"));
}

// The exact normaliser (intervals, index recovery, stride checks, domain cells) must agree with the
// solver alone on every obligation; and it must not prove what is false (mutants it must leave to Z3).
#include <catch2/catch.hpp>

#include "layout/layout_fixture.hpp"
#include "prove/prove_fixture.hpp"
#include "prove/recover.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

TEST_CASE("the normaliser and the solver alone agree on every obligation of every self pair and every pair with vllm-flash-nhd",
          "[prove][normaliser]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  std::vector<std::string> names;
  for (const auto& f : catalog.layout_files()) names.push_back(f.stem().string());
  prove::ProveOptions solver_only;
  solver_only.normalise = false;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& n : names) {
    pairs.push_back({n, n});
    pairs.push_back({n, "vllm-flash-nhd"});
    pairs.push_back({"vllm-flash-nhd", n});
  }
  for (const auto& [s, t] : pairs) {
    INFO(s << " -> " << t);
    auto fast = test::prove_named(s, t, "small");
    auto slow = test::prove_named(s, t, "small", solver_only);
    CHECK(prove::grade_name(fast.grade) == prove::grade_name(slow.grade));
    REQUIRE(fast.obligations.size() == slow.obligations.size());
    for (std::size_t i = 0; i < fast.obligations.size(); ++i) {
      INFO(fast.obligations[i].name << "(" << prove::side_name(fast.obligations[i].side) << ")");
      CHECK(prove::status_name(fast.obligations[i].status) == prove::status_name(slow.obligations[i].status));
    }
  }
}

TEST_CASE("index recovery proves only what holds: dropping a slot axis or a remainder leaves a coordinate unrecovered",
          "[prove][normaliser]") {
  test::TempDir dir;
  auto cache = test::small_cache();
  auto j = test::flash_nhd_declaration();
  auto b = test::bind_inline(dir, j, cache);
  CHECK(prove::unrecovered_coordinates(b, b.tensors[0], b.tensors[0].views[0]).empty());

  j["tensors"][0]["index"][2] = "0";  // the slot in the block is lost: tokens of one block collide
  b = test::bind_inline(dir, j, cache);
  CHECK(prove::unrecovered_coordinates(b, b.tensors[0], b.tensors[0].views[0]) == std::vector<std::string>{"token"});

  j = test::flash_nhd_declaration();
  j["tensors"][0]["shape"][4] = "2 * head_size";
  j["tensors"][0]["index"][4] = "dim + head";  // not a mixed radix: head 1 dim 0 == head 0 dim 1
  b = test::bind_inline(dir, j, cache);
  auto missing = prove::unrecovered_coordinates(b, b.tensors[0], b.tensors[0].views[0]);
  CHECK(std::find(missing.begin(), missing.end(), "dim") != missing.end());

  j = test::flash_nhd_declaration();
  j["tensors"][0]["shape"][4] = "head_size * head_size";
  j["tensors"][0]["index"][4] = "dim * head_size + kv * 20";  // the remainder overflows its radix
  b = test::bind_inline(dir, j, cache);
  missing = prove::unrecovered_coordinates(b, b.tensors[0], b.tensors[0].views[0]);
  CHECK_FALSE(missing.empty());
}

TEST_CASE("what the normaliser leaves, the solver refutes: a mutant whose tokens collide", "[prove][normaliser]") {
  test::TempDir dir;
  auto j = test::flash_nhd_declaration();
  j["tensors"][0]["index"][2] = "token % 8";  // half the slots: tokens t and t + 8 collide
  auto decl = spec::load_layout(dir.write("case.json", j.dump()));
  auto cache = test::small_cache();
  auto p = prove::prove(decl, decl, cache);
  CHECK(p.grade == prove::Grade::Refused);
  auto inj = test::find_obligation(p, "injective", prove::Side::Source);
  REQUIRE(inj->status == prove::Status::Refuted);
  const auto& ps = inj->counterexample->positions;
  CHECK(ps[1].coord[2] - ps[0].coord[2] == 8);
  test::recheck_counterexamples(p);
}

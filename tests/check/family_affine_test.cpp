// The aliasing shortcut decides "no target byte written twice" without the solver, so it is tested
// against enumeration on random families: whenever affine_distinct says "distinct", enumerating every
// member byte under several injective tables finds no byte written twice. Both answers must occur, so
// the test is not vacuous (the shortcut answers "distinct" on some families, and some random families
// do alias).
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "check/family_affine.hpp"
#include "check/family_plan.hpp"
#include "layout/block_tables.hpp"
#include "layout/layout_fixture.hpp"

using namespace kvlayout;

namespace {

struct Draw {
  nlohmann::json plan;
  int families = 1;
};

// A random family (or two of one shape with different constants) over up to three variables, one of them
// possibly read through the target's block table.
Draw random_plan(std::mt19937_64& rng, std::int64_t num_blocks) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t bytes = pick(1, 4);
  nlohmann::json over = nlohmann::json::object();
  std::string offset;
  const int vars = static_cast<int>(pick(1, 3));
  for (int i = 0; i < vars; ++i) {
    std::string v = "v" + std::to_string(i);
    over[v] = std::to_string(pick(1, 4));
    std::int64_t coef = pick(-3, 12) * (pick(0, 1) ? 1 : bytes);
    offset += (offset.empty() ? "" : " + ") + std::to_string(coef) + " * " + v;
  }
  if (pick(0, 1)) {
    over["b"] = std::to_string(num_blocks);
    offset += " + " + std::to_string(pick(1, 40)) + " * target.block_table[b]";
  }
  Draw d;
  d.families = static_cast<int>(pick(1, 2));
  const std::int64_t base = 200;  // keeps offsets non-negative (bounds are another question)
  for (int k = 0; k < d.families; ++k) {
    const std::int64_t constant = base + (k == 0 ? 0 : pick(1, 30));
    nlohmann::json family = {
        {"over", over},
        {"source", {{"tensor", "kv_cache"}, {"instance", "0"}, {"offset", "0"}}},
        {"target", {{"tensor", "kv_cache"}, {"instance", "0"}, {"offset", std::to_string(constant) + " + " + offset}}},
        {"bytes", std::to_string(bytes)}};
    d.plan["families"].push_back(family);
  }
  d.plan["form"] = "families";
  return d;
}

// Some target byte written by two distinct member bytes under these tables.
bool aliases(const check::FamilyPlan& plan, const layout::BlockTables& s, const layout::BlockTables& t) {
  std::set<std::int64_t> written;
  for (const auto& f : plan.families) {
    std::vector<std::int64_t> v(f.first);
    while (true) {
      check::ConcreteMember m = check::evaluate_member(plan, f, v, s, t);
      REQUIRE(m.error.empty());
      for (std::int64_t k = 0; k < m.bytes; ++k)
        if (!written.insert(m.target_offset + k).second) return true;
      std::size_t i = 0;
      for (; i < v.size(); ++i) {
        if (++v[i] < f.end[i]) break;
        v[i] = f.first[i];
      }
      if (i == v.size()) break;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("affine_distinct never claims distinct bytes that enumeration finds aliased", "[check][family-affine]") {
  const layout::BoundLayout target = test::bind_named("vllm-flash-nhd", "small");
  const std::int64_t num_blocks = target.tables.at(0).length;
  std::mt19937_64 rng(20261201);
  int claimed = 0, aliased = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Draw d = random_plan(rng, num_blocks);
    INFO(d.plan.dump());
    const check::FamilyPlan plan = check::read_family_plan(target, target, d.plan, "random");
    const bool distinct = d.families == 1 ? check::affine_distinct(plan, plan.families[0])
                                          : check::affine_distinct(plan, plan.families[0], plan.families[1]);
    bool any_alias = false;
    for (std::uint64_t seed = 0; seed < 4 && !any_alias; ++seed) {
      layout::BlockTables t = seed == 0 ? layout::identity_tables(target) : layout::random_tables(target, seed);
      any_alias = aliases(plan, t, t);
    }
    if (distinct) {
      ++claimed;
      REQUIRE_FALSE(any_alias);
    }
    if (any_alias) ++aliased;
  }
  CHECK(claimed > 50);
  CHECK(aliased > 50);
}

// plan emit: every emitted plan (shipped EXACT pairs, small and production caches, all three forms) is
// checked OK by plan check, the families also by byte-copy enumeration on the small cache; and the
// control: one corrupted offset makes plan check answer WRONG_MAPPING.
#include <catch2/catch.hpp>

#include "check/family_plan.hpp"
#include "check/plan_check.hpp"
#include "check/plan_emit.hpp"
#include "family_oracle.hpp"
#include "layout/block_tables.hpp"
#include "layout/layout_fixture.hpp"
#include "prove/proof.hpp"
#include "spec/error.hpp"

using namespace kvlayout;

namespace {

struct Pair {
  const char* source;
  const char* target;
};

const Pair kPairs[] = {{"vllm-flash-nhd", "vllm-flashinfer-hnd"}, {"vllm-flashinfer-nhd", "vllm-flash-nhd"},
                       {"vllm-flash-nhd", "sglang-mha"},          {"vllm-paged-legacy", "vllm-flash-nhd"},
                       {"trtllm-pool", "vllm-flashinfer-hnd"},    {"vllm-flash-nhd", "vllm-flash-nhd-tp2-r1"},
                       {"vllm-mla", "lmcache-mla"}};

prove::Proof proof_of(const Pair& p, const std::string& cache, const layout::Overrides& overrides = {}) {
  const layout::BoundLayout s = test::bind_named(p.source, cache, overrides);
  const layout::BoundLayout t = test::bind_named(p.target, cache, overrides);
  return prove::prove(s.layout, t.layout, s.cache, {}, overrides);
}

check::CheckResult check_emitted(const prove::Proof& proof, const nlohmann::json& plan) {
  return check::check_plan(*proof.source_bound, *proof.target_bound, plan, "emitted");
}

check::PlanEmitOptions with(check::PlanFormat f) {
  check::PlanEmitOptions o;
  o.format = f;
  return o;
}

}  // namespace

TEST_CASE("plan emit: every form of every emitted plan on the small cache is checked OK", "[plan-emit]") {
  for (const Pair& p : kPairs) {
    prove::Proof proof = proof_of(p, "small");
    INFO(p.source << " -> " << p.target << " " << prove::grade_name(proof.grade));
    REQUIRE(check::plan_emittable(proof));
    for (check::PlanFormat f : {check::PlanFormat::Families, check::PlanFormat::Runs, check::PlanFormat::Descriptors}) {
      nlohmann::json plan = check::emit_plan(proof, with(f));
      check::CheckResult r = check_emitted(proof, plan);
      INFO("form " << static_cast<int>(f) << ": " << check::code(r.verdict) << " " << r.message);
      REQUIRE(r.verdict == check::Verdict::Ok);
      if (f == check::PlanFormat::Families) {
        // The oracle agrees under concrete tables: nothing wrong, nothing missing.
        const check::FamilyPlan fp = check::read_family_plan(*proof.source_bound, *proof.target_bound, plan, "emitted");
        for (std::uint64_t seed = 1; seed <= 2; ++seed)
          CHECK(test::simulate_families(*proof.source_bound, *proof.target_bound, fp, layout::random_tables(*proof.source_bound, seed),
                                        layout::random_tables(*proof.target_bound, seed + 11))
                    .empty());
      }
    }
  }
}

TEST_CASE("plan emit: families at production size are checked OK for every table", "[plan-emit]") {
  for (const Pair& p : {kPairs[0], kPairs[1], kPairs[3]}) {
    prove::Proof proof = proof_of(p, "llama-3.1-70b");
    nlohmann::json plan = check::emit_plan(proof, with(check::PlanFormat::Families));
    CHECK(plan["families"].size() <= 4);  // a few families, independent of the block count
    check::CheckResult r = check_emitted(proof, plan);
    INFO(p.source << " -> " << p.target << ": " << r.message);
    REQUIRE(r.verdict == check::Verdict::Ok);
    CHECK(*r.checked_bytes == std::int64_t{80} * 2 * 131072 * 8 * 128 * 2);
  }
}

TEST_CASE("plan emit: concrete runs and descriptors on a production-shaped cache, with given tables", "[plan-emit]") {
  const layout::Overrides shorter = {{"num_tokens", 512}};
  prove::Proof proof = proof_of(kPairs[0], "llama-3.1-70b", shorter);
  check::PlanEmitOptions o = with(check::PlanFormat::Runs);
  o.source_tables = layout::random_tables(*proof.source_bound, 5);
  o.target_tables = layout::reversed_tables(*proof.target_bound);
  nlohmann::json runs = check::emit_plan(proof, o);
  CHECK(runs["tables"]["target.block_table"][0] == 31);  // 512 tokens = 32 blocks, reversed
  REQUIRE(check_emitted(proof, runs).verdict == check::Verdict::Ok);
  o.format = check::PlanFormat::Descriptors;
  nlohmann::json flat = check::emit_plan(proof, o);
  CHECK(flat["source_descriptors"].size() == flat["target_descriptors"].size());
  REQUIRE(check_emitted(proof, flat).verdict == check::Verdict::Ok);
  // Past the descriptor limit: refused rather than printing a list nobody can use.
  o.max_descriptors = 10;
  CHECK_THROWS_AS(check::emit_plan(proof, o), spec::SpecError);
}

TEST_CASE("plan emit: control: one corrupted offset is a wrong mapping", "[plan-emit]") {
  prove::Proof proof = proof_of(kPairs[0], "small");
  // Families: the source reads the block the target's table names.
  nlohmann::json fam = check::emit_plan(proof, with(check::PlanFormat::Families));
  std::string& off = fam["families"][0]["source"]["offset"].get_ref<std::string&>();
  const auto at = off.find("source.block_table[");
  REQUIRE(at != std::string::npos);
  off.replace(at, 6, "target");
  CHECK(check_emitted(proof, fam).verdict == check::Verdict::WrongMapping);
  // Runs and descriptors: one source address replaced by another run's.
  for (check::PlanFormat f : {check::PlanFormat::Runs, check::PlanFormat::Descriptors}) {
    nlohmann::json plan = check::emit_plan(proof, with(f));
    const char* key = f == check::PlanFormat::Runs ? "source_runs" : "source_descriptors";
    REQUIRE(check_emitted(proof, plan).verdict == check::Verdict::Ok);
    if (f == check::PlanFormat::Runs) plan[key][1]["addr"] = plan[key][0]["addr"];
    else plan[key][1][0] = plan[key][0][0];
    check::CheckResult r = check_emitted(proof, plan);
    INFO(r.message);
    CHECK(r.verdict == check::Verdict::WrongMapping);
  }
}

TEST_CASE("plan emit: a scope emits only its positions, a refused pair is not emitted", "[plan-emit]") {
  prove::Proof proof = proof_of(kPairs[0], "small");
  check::PlanEmitOptions o = with(check::PlanFormat::Families);
  o.scope = "token < 40 && layer == 1";
  nlohmann::json plan = check::emit_plan(proof, o);
  REQUIRE(plan["scope"] == "token < 40 && layer == 1");
  check::CheckResult r = check_emitted(proof, plan);
  INFO(r.message);
  REQUIRE(r.verdict == check::Verdict::Ok);
  CHECK(*r.checked_bytes == 40 * 2 * 4 * 16 * 2);
  // The same families without their scope leave the rest of the cache unwritten.
  plan.erase("scope");
  CHECK(check_emitted(proof, plan).verdict == check::Verdict::Uncovered);
  prove::Proof refused = proof_of({"vllm-flash-nhd-tp2-r1", "vllm-flash-nhd"}, "small");
  CHECK_FALSE(check::plan_emittable(refused));
}

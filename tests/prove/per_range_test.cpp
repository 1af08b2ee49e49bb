// Tensors with a per_range, graded by the prover (normaliser on and off) and by exhaustive enumeration:
// a pipeline-parallel stage against the whole cache, and controls whose per_range does not match their
// domain, which in-bounds must refute (a false EXACT there would move bytes into a missing instance).
#include <catch2/catch.hpp>

#include "enumerate/cross_check.hpp"
#include "layout/layout_fixture.hpp"
#include "prove/proof.hpp"
#include "prove/prove_fixture.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;
using prove::Grade;
using prove::Reason;

namespace {

std::shared_ptr<const spec::Layout> named(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_layout(catalog.find_layout(name).string());
}

// Stage pp_rank of vllm-flash-nhd-pp over pp_size stages, as layout::expand_group names a member.
std::shared_ptr<const spec::Layout> stage(std::int64_t pp_size, std::int64_t pp_rank) {
  return spec::with_params(*named("vllm-flash-nhd-pp"), {{"pp_size", pp_size}, {"pp_rank", pp_rank}},
                           "vllm-flash-nhd-pp[pp_rank=" + std::to_string(pp_rank) + "]");
}

spec::CacheShape with_layers(std::int64_t layers) {
  spec::CacheShape c = test::small_cache();
  c.params["num_layers"] = layers;
  c.name = "small-" + std::to_string(layers) + "-layers";
  return c;
}

struct Graded {
  prove::Proof normalised, solver_only;
  enumerate::CrossCheck cross;
};

Graded grade(std::shared_ptr<const spec::Layout> s, std::shared_ptr<const spec::Layout> t, const spec::CacheShape& cache) {
  prove::ProveOptions off;
  off.normalise = false;
  Graded g{prove::prove(s, t, cache), prove::prove(s, t, cache, off), {}};
  g.cross = enumerate::cross_check(enumerate::enumerate_layout(s, cache), enumerate::enumerate_layout(t, cache));
  test::recheck_counterexamples(g.normalised);
  test::recheck_counterexamples(g.solver_only);
  return g;
}

void expect(const Graded& g, Grade grade, std::optional<Reason> reason = std::nullopt) {
  INFO(g.normalised.source_layout->name << " -> " << g.normalised.target_layout->name << " on " << g.normalised.cache.name);
  CHECK(g.cross.checked);
  CHECK(prove::grade_name(g.normalised.grade) == prove::grade_name(grade));
  CHECK(prove::grade_name(g.solver_only.grade) == prove::grade_name(grade));
  CHECK(prove::grade_name(g.cross.grade) == prove::grade_name(grade));
  CHECK(prove::info(g.solver_only.reason).code == std::string(prove::info(g.normalised.reason).code));
  CHECK(prove::info(g.cross.reason).code == std::string(prove::info(g.normalised.reason).code));
  if (reason) CHECK(prove::info(g.normalised.reason).code == std::string(prove::info(*reason).code));
}

// A control: FlashAttention NHD holding `holds`, its tensor per layer over per_range [first, end).
std::shared_ptr<const spec::Layout> control(const test::TempDir& dir, const std::string& holds, int first, int end) {
  auto j = test::flash_nhd_declaration();
  j["name"] = "narrow";
  j["holds"] = holds;
  j["tensors"][0]["per_range"] = spec::Json::array({first, end});
  return spec::load_layout(dir.write("narrow.json", j.dump(2)));
}

void expect_out_of_bounds(const test::TempDir& dir, const std::string& holds, int first, int end, const spec::CacheShape& cache) {
  auto bad = control(dir, holds, first, end);
  auto whole = named("vllm-flash-nhd");
  INFO("holds " << holds << ", per_range [" << first << ", " << end << ") on " << cache.name);
  for (bool bad_is_source : {true, false}) {
    Graded g = bad_is_source ? grade(bad, whole, cache) : grade(whole, bad, cache);
    expect(g, Grade::Refused, Reason::OutOfBounds);
    const prove::Side side = bad_is_source ? prove::Side::Source : prove::Side::Target;
    for (const prove::Proof* p : {&g.normalised, &g.solver_only}) {
      const auto* in_bounds = test::find_obligation(*p, "in-bounds", side);
      REQUIRE(in_bounds != nullptr);
      CHECK(in_bounds->status == prove::Status::Refuted);
      CHECK(in_bounds->reason == Reason::OutOfBounds);
      REQUIRE(in_bounds->counterexample);
      CHECK_THAT(in_bounds->counterexample->summary, Catch::Contains("instance layer"));
    }
    bool enumeration_found_it = false;
    for (const auto& f : g.cross.findings)
      enumeration_found_it = enumeration_found_it || (f.name == "in-bounds" && f.side == side && f.reason == Reason::OutOfBounds);
    CHECK(enumeration_found_it);
  }
}

}  // namespace

TEST_CASE("per_range: a PP stage is a SUBSET of the whole cache and the whole is REFUSED from a stage, by proof and enumeration", "[prove][per-range][pp]") {
  auto whole = named("vllm-flash-nhd");
  for (std::int64_t layers : {2, 5}) {
    const spec::CacheShape cache = layers == 2 ? test::small_cache() : with_layers(layers);
    for (std::int64_t rank = 0; rank < 2; ++rank) {
      auto part = stage(2, rank);
      expect(grade(whole, part, cache), Grade::Subset);
      expect(grade(part, whole, cache), Grade::Refused, Reason::MissingPositions);
      expect(grade(part, part, cache), Grade::ExactToken);  // as vllm-flash-nhd itself: the last block's padding
    }
  }
}

TEST_CASE("per_range: a stage's in-bounds is proved by intervals alone, instance range included", "[prove][per-range][pp]") {
  auto whole = named("vllm-flash-nhd");
  auto cache = with_layers(5);
  prove::Proof p = prove::prove(whole, stage(2, 1), cache);  // layers [3, 5): per_first 3, 2 instances
  REQUIRE(p.target_bound->tensors.at(0).per_first == 3);
  REQUIRE(p.target_bound->tensors.at(0).instances == 2);
  const auto* in_bounds = test::find_obligation(p, "in-bounds", prove::Side::Target);
  REQUIRE(in_bounds != nullptr);
  CHECK(in_bounds->status == prove::Status::Proved);
  CHECK(in_bounds->method == "interval analysis");
}

TEST_CASE("per_range controls: a range too narrow or shifted for the domain is REFUSED out-of-bounds by proof and enumeration", "[prove][per-range][controls]") {
  test::TempDir dir;
  // Too narrow: holds layers 0 and 1, one instance.
  expect_out_of_bounds(dir, "layer < 2", 0, 1, test::small_cache());
  // Shifted by one: holds layers [0, 2), instances for [1, 3) (layer 0 would be instance -1).
  expect_out_of_bounds(dir, "layer < 2", 1, 3, with_layers(3));
  // Shifted the other way: holds [1, 3), instances for [0, 2) (layer 2 would be instance 2 of 2).
  expect_out_of_bounds(dir, "layer >= 1 && layer < 3", 0, 2, with_layers(3));
  // A domain interval analysis cannot narrow (the solver alone must find layer 0).
  expect_out_of_bounds(dir, "layer * layer != 4 || kv == 0", 1, 3, with_layers(3));
}

// The exhaustive cross-check on hand-built pairs with known grades, one per grade, and its agreement
// with the prover on each.
#include <catch2/catch.hpp>

#include "enumerate/cross_check.hpp"
#include "layout/layout_fixture.hpp"
#include "prove/proof.hpp"

using namespace kvlayout;
using prove::Grade;
using prove::Reason;

namespace {

// A dense per-head layout, [layer][kv][token][head][dim], written inline and edited per case.
spec::Json dense() {
  return spec::Json::parse(R"J({
    "name": "case", "engine": "hand-built", "control": true, "content": "kv-heads", "dtype": "bf16",
    "tensors": [{"name": "cache", "shape": ["num_layers", 2, "num_tokens", "num_kv_heads", "head_size"],
                 "index": ["layer", "kv", "token", "head", "dim"]}]
  })J");
}

struct Outcome {
  enumerate::CrossCheck cross;
  prove::Proof proof;
};

Outcome check(const spec::Json& source, const spec::Json& target) {
  test::TempDir dir;
  spec::Json s = source, t = target;
  s["name"] = "source";
  t["name"] = "target";
  auto ls = spec::load_layout(dir.write("source.json", s.dump()));
  auto lt = spec::load_layout(dir.write("target.json", t.dump()));
  auto small = test::small_cache();
  auto es = enumerate::enumerate_layout(ls, small), et = enumerate::enumerate_layout(lt, small);
  return {enumerate::cross_check(es, et), prove::prove(ls, lt, small)};
}

void expect(const Outcome& o, Grade grade, Reason reason) {
  CHECK(prove::grade_name(o.cross.grade) == prove::grade_name(grade));
  CHECK(prove::info(o.cross.reason).code == std::string(prove::info(reason).code));
  CHECK(prove::grade_name(o.proof.grade) == prove::grade_name(o.cross.grade));
  CHECK(o.proof.reason == o.cross.reason);
}

}  // namespace

TEST_CASE("cross-check: a permutation of dense axes is EXACT_BYTE, every position checked", "[enumerate][cross-check]") {
  auto t = dense();
  t["tensors"][0]["stride_order"] = spec::Json::array({3, 0, 2, 1, 4});
  auto o = check(dense(), t);
  expect(o, Grade::ExactByte, Reason::Exact);
  // 2 layers x 2 x 67 tokens x 4 heads x 16 dims, on both sides, under three table choices.
  CHECK(o.cross.checked);
  CHECK(o.cross.positions_checked == 2 * 3 * (2 * 2 * 67 * 4 * 16));
}

TEST_CASE("cross-check: source padding is EXACT_TOKEN", "[enumerate][cross-check]") {
  auto s = dense();
  s["tensors"][0]["size"] = "num_layers * 2 * num_tokens * num_kv_heads * head_size + 7";  // a tail no position uses
  expect(check(s, dense()), Grade::ExactToken, Reason::Padding);
}

TEST_CASE("cross-check: a target holding half the heads is SUBSET, the reverse REFUSED", "[enumerate][cross-check]") {
  auto t = dense();
  t["holds"] = "head < 2";
  t["tensors"][0]["shape"][3] = 2;
  expect(check(dense(), t), Grade::Subset, Reason::DroppedPositions);
  expect(check(t, dense()), Grade::Refused, Reason::MissingPositions);
}

TEST_CASE("cross-check: a narrowing element type is NOT_EXACT, a dropped scale too", "[enumerate][cross-check]") {
  auto t = dense();
  t["dtype"] = "fp8_e4m3";
  expect(check(dense(), t), Grade::NotExact, Reason::LossyValues);
  auto scaled = dense();
  scaled["dtype"] = "fp8_e4m3";
  scaled["scale"] = spec::Json::parse(R"J({"dtype": "fp32", "per": ["layer", "kv"]})J");
  auto wide = dense();
  wide["dtype"] = "fp32";  // fp8 -> fp32 -> fp8 is exact, but the scale is gone
  expect(check(scaled, wide), Grade::NotExact, Reason::ScaleMismatch);
  expect(check(scaled, scaled), Grade::ExactByte, Reason::Exact);
}

TEST_CASE("cross-check: collisions, out-of-bounds indices, misfits and content are REFUSED", "[enumerate][cross-check]") {
  auto collide = dense();
  collide["tensors"][0]["strides"] = spec::Json::array({"2 * num_tokens * num_kv_heads * head_size",
                                                        "num_tokens * num_kv_heads * head_size", "head_size", "head_size", 1});
  expect(check(dense(), collide), Grade::Refused, Reason::Collision);
  auto oob = dense();
  oob["tensors"][0]["index"][4] = "dim + 1";
  expect(check(oob, dense()), Grade::Refused, Reason::OutOfBounds);
  auto nofit = dense();
  nofit["requires"] = spec::Json::array({"head_size == 128"});
  auto misfit = check(dense(), nofit);
  expect(misfit, Grade::Refused, Reason::DoesNotFit);
  // A grade read off a declaration that does not fit: nothing was compared, so it is no cross-check.
  CHECK_FALSE(misfit.cross.checked);
  CHECK(misfit.cross.positions_checked == 0);
  CHECK_THAT(misfit.cross.not_checked, Catch::Contains("target does not fit small"));
  auto mla = spec::Json::parse(R"J({
    "name": "mla", "engine": "hand-built", "control": true, "content": "mla-latent", "dtype": "bf16",
    "tensors": [{"name": "c", "shape": ["num_layers", "num_tokens", "kv_lora_rank + qk_rope_head_dim"],
                 "index": ["layer", "token", "latent"]}]})J");
  expect(check(mla, dense()), Grade::Refused, Reason::ContentMismatch);
}

TEST_CASE("cross-check: a paged layout is checked under identity, reversed and random block tables", "[enumerate][cross-check]") {
  auto paged = test::flash_nhd_declaration();
  auto o = check(paged, dense());
  expect(o, Grade::ExactToken, Reason::Padding);
  auto small = test::small_cache();
  test::TempDir dir;
  auto e = enumerate::enumerate_layout(spec::load_layout(dir.write("case.json", paged.dump())), small);
  REQUIRE(e.maps.size() == 3);
  CHECK(e.maps[0].element != e.maps[1].element);
  CHECK(e.maps[0].element != e.maps[2].element);
  // A table choice matters: a layout whose block index ignores the table is caught only when the
  // tables differ from the identity.
  auto ignores = test::flash_nhd_declaration();
  ignores["tensors"][0]["index"][1] = "token / block_size";
  auto moved = check(paged, ignores);
  CHECK(moved.cross.grade == moved.proof.grade);
}

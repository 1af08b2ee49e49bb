// Expected grades and obligation outcomes for known pairs, each counterexample re-evaluated.
#include <catch2/catch.hpp>

#include "prove/prove_fixture.hpp"

using namespace kvlayout;
using prove::Grade;
using prove::Side;
using prove::Status;
using test::find_obligation;
using test::prove_named;

TEST_CASE("FlashAttention NHD -> HND is EXACT_BYTE at 128K tokens and EXACT_TOKEN on small", "[prove][grades]") {
  auto p = prove_named("vllm-flash-nhd", "vllm-flash-hnd", "llama-3.1-70b");
  CHECK(p.grade == Grade::ExactByte);
  for (const auto& o : p.obligations) CHECK(o.status == Status::Proved);
  CHECK(p.skipped.empty());
  CHECK(*p.source_positions == 80LL * 2 * 131072 * 8 * 128);
  CHECK(p.unblocked_by.empty());

  auto s = prove_named("vllm-flash-nhd", "vllm-flash-hnd", "small");
  CHECK(s.grade == Grade::ExactToken);
  CHECK(s.reason == prove::Reason::Padding);
}

TEST_CASE("a layout with padding is EXACT_TOKEN with a padding witness and its count", "[prove][grades]") {
  // small: 67 tokens in 5 blocks of 16 leave 13 slots of H*D = 64 elements empty, per K/V and per layer.
  auto p = prove_named("vllm-flash-nhd", "lmcache-2ltd", "small");
  REQUIRE(p.grade == Grade::ExactToken);
  auto pad = find_obligation(p, "padding", Side::Source);
  REQUIRE(pad);
  CHECK(pad->status == Status::Refuted);
  REQUIRE(pad->counterexample);
  CHECK(*pad->counterexample->count == 13 * 64 * 2 * 2);
  REQUIRE(pad->counterexample->element);
  // The witness must really be unaddressed: the last element is block 4, slot 15 (token 79 >= 67).
  CHECK(pad->counterexample->element->offset == 2 * 5 * 16 * 64 - 1);
  // SGLang's reserved page 0 is padding too: one slot of H*D per K/V buffer and layer.
  auto sg = prove_named("sglang-mha", "hf-dynamic", "small");
  CHECK(sg.grade == Grade::ExactToken);
  auto sg_pad = find_obligation(sg, "padding", Side::Source);
  CHECK(*sg_pad->counterexample->count == 64 * 2 * 2);
  CHECK(sg_pad->counterexample->element->offset == 0);
  // Dense layouts have none.
  CHECK(prove_named("hf-dynamic", "vllm-flash-nhd", "small").grade == Grade::ExactByte);
}

TEST_CASE("whole cache -> one TP shard is SUBSET: carries refuted, the shard's heads arrive", "[prove][grades]") {
  auto p = prove_named("vllm-flash-nhd", "vllm-flash-nhd-tp2-r0", "small");
  CHECK(p.grade == Grade::Subset);
  CHECK(find_obligation(p, "covers", Side::Pair)->status == Status::Proved);
  auto carries = find_obligation(p, "carries", Side::Pair);
  REQUIRE(carries->status == Status::Refuted);
  CHECK(*carries->counterexample->count == 2 * 2 * 67 * 2 * 16);
  CHECK_THAT(p.unblocked_by, Catch::Contains("tp_rank 1 holds head 2..3"));
  test::recheck_counterexamples(p);
}

TEST_CASE("one TP shard -> whole cache is REFUSED naming the missing heads and the rank that holds them", "[prove][grades]") {
  auto p = prove_named("vllm-flash-nhd-tp2-r0", "vllm-flash-nhd", "llama-3.1-70b");
  CHECK(p.grade == Grade::Refused);
  CHECK(p.reason == prove::Reason::MissingPositions);
  auto covers = find_obligation(p, "covers", Side::Pair);
  REQUIRE(covers->status == Status::Refuted);
  REQUIRE(covers->counterexample);
  CHECK(covers->counterexample->details == std::vector<std::string>{"head 4..7 of 0..7"});
  const auto& w = covers->counterexample->positions.at(0);
  CHECK(w.coord[3] == 4);  // minimised: the first missing head
  CHECK(w.source->placement == layout::Placement::NotHeld);
  CHECK(w.target->placement == layout::Placement::Held);
  CHECK_THAT(p.unblocked_by, Catch::Contains("gather the other tensor-parallel ranks") && Catch::Contains("tp_rank 1 holds head 4..7"));
  test::recheck_counterexamples(p);
}

TEST_CASE("MLA latent -> per-head K/V is REFUSED for its content, unblocked by decompression", "[prove][grades]") {
  auto p = prove_named("vllm-mla", "vllm-flash-nhd", "small");
  CHECK(p.grade == Grade::Refused);
  CHECK(p.reason == prove::Reason::ContentMismatch);
  CHECK(find_obligation(p, "fits", Side::Pair)->status == Status::Refuted);
  CHECK_THAT(p.unblocked_by, Catch::Contains("kv_b_proj"));
  auto back = prove_named("vllm-flash-nhd", "sglang-mla", "small");
  CHECK(back.reason == prove::Reason::ContentMismatch);
}

TEST_CASE("bf16 -> fp8 is NOT_EXACT with a value that does not survive", "[prove][grades][values]") {
  auto p = prove_named("vllm-flash-nhd", "vllm-flash-nhd-fp8", "small");
  CHECK(p.grade == Grade::NotExact);
  CHECK(p.reason == prove::Reason::LossyValues);
  auto values = find_obligation(p, "values", Side::Pair);
  REQUIRE(values->counterexample);
  REQUIRE(values->counterexample->value);
  const auto& v = *values->counterexample->value;
  CHECK(v.source_type == spec::DType::bf16);
  CHECK(v.target_type == spec::DType::fp8_e4m3);
  CHECK(v.source_bits != v.round_trip_bits);
  CHECK_FALSE(values->counterexample->positions.empty());
  // Dropping the scale on the way back is NOT_EXACT for the scale, although fp8 -> bf16 -> fp8 is exact.
  auto back = prove_named("vllm-flash-nhd-fp8", "vllm-flash-nhd", "small");
  CHECK(back.grade == Grade::NotExact);
  CHECK(back.reason == prove::Reason::ScaleMismatch);
  CHECK_THAT(back.unblocked_by, Catch::Contains("keep the quantisation scales"));
  // Same type, same scale handling: exact.
  CHECK(prove::is_exact(prove_named("vllm-flash-nhd-fp8", "vllm-flash-nhd-fp8", "small").grade));
}

TEST_CASE("broken-collide is REFUSED by injective with two positions that really share an element", "[prove][grades]") {
  for (const char* cache : {"small", "llama-3.1-70b", "qwen2.5-7b"}) {
    INFO(cache);
    auto p = prove_named("vllm-flash-nhd", "broken-collide", cache);
    CHECK(p.grade == Grade::Refused);
    CHECK(p.reason == prove::Reason::Collision);
    auto inj = find_obligation(p, "injective", Side::Target);
    REQUIRE(inj->status == Status::Refuted);
    const auto& ps = inj->counterexample->positions;
    REQUIRE(ps.size() == 2);
    CHECK(ps[0].coord != ps[1].coord);
    CHECK(ps[0].target->address.tensor == ps[1].target->address.tensor);
    CHECK(ps[0].target->address.instance == ps[1].target->address.instance);
    CHECK(ps[0].target->address.offset == ps[1].target->address.offset);
    CHECK_THAT(p.unblocked_by, Catch::Contains("fix the declaration of broken-collide"));
    test::recheck_counterexamples(p);
  }
}

TEST_CASE("broken-oob is REFUSED by in-bounds and broken-nofit by fits", "[prove][grades]") {
  auto oob = prove_named("vllm-flash-nhd", "broken-oob", "small");
  CHECK(oob.reason == prove::Reason::OutOfBounds);
  auto ib = find_obligation(oob, "in-bounds", Side::Target);
  REQUIRE(ib->status == Status::Refuted);
  CHECK(ib->counterexample->positions.at(0).target->placement == layout::Placement::OutOfBounds);
  CHECK(ib->counterexample->positions.at(0).coord[2] == 15);  // the first token at a block's end
  test::recheck_counterexamples(oob);

  auto nofit = prove_named("broken-nofit", "vllm-flash-nhd", "small");
  CHECK(nofit.grade == Grade::Refused);
  CHECK(nofit.reason == prove::Reason::DoesNotFit);
  CHECK(find_obligation(nofit, "fits", Side::Source)->status == Status::Refuted);
  CHECK(find_obligation(nofit, "in-bounds", Side::Source) == nullptr);  // could not run: skipped
  // It fits the production shape (head_size 128).
  CHECK(prove::is_exact(prove_named("broken-nofit", "vllm-flash-nhd", "llama-3.1-8b").grade));
}

TEST_CASE("a tiny solver limit gives UNKNOWN, never a grade", "[prove][unknown]") {
  prove::ProveOptions tiny;
  tiny.limit_ms = 1;
  auto p = prove_named("vllm-flash-nhd", "broken-collide", "llama-3.1-70b", tiny);
  CHECK(p.grade == Grade::Unknown);
  CHECK(p.reason == prove::Reason::SolverLimit);
  CHECK(find_obligation(p, "injective", Side::Target)->status == Status::Unknown);
}

TEST_CASE("control: with injective switched off, broken-collide is no longer refused", "[prove][controls]") {
  prove::ProveOptions off;
  off.disabled = {"injective"};
  auto p = prove_named("vllm-flash-nhd", "broken-collide", "llama-3.1-70b", off);
  CHECK(p.grade != Grade::Refused);
  CHECK(find_obligation(p, "injective", Side::Target) == nullptr);
  // and with it on, it is (the same pair, the same cache).
  CHECK(prove_named("vllm-flash-nhd", "broken-collide", "llama-3.1-70b").grade == Grade::Refused);
}

TEST_CASE("every finding is listed, not only the first", "[prove][grades]") {
  // TP rank 0 -> fp8 whole cache: missing heads (REFUSED) and lossy values (NOT_EXACT) both reported.
  auto p = prove_named("vllm-flash-nhd-tp2-r0", "vllm-flash-nhd-fp8", "small");
  CHECK(p.grade == Grade::Refused);
  CHECK(find_obligation(p, "covers", Side::Pair)->status == Status::Refuted);
  CHECK(find_obligation(p, "values", Side::Pair)->status == Status::Refuted);
  CHECK(find_obligation(p, "padding", Side::Source)->status == Status::Refuted);
}

TEST_CASE("the grade is the worst finding, and an unknown outcome is never exact", "[prove][grades]") {
  auto result = [](prove::Reason reason, Status status) {
    prove::ObligationResult r;
    r.status = status;
    r.reason = reason;
    return r;
  };
  using prove::Reason;
  CHECK(prove::grade_of({}).first == Grade::ExactByte);
  CHECK(prove::grade_of({result(Reason::Padding, Status::Refuted), result(Reason::DroppedPositions, Status::Refuted)}).first == Grade::Subset);
  CHECK(prove::grade_of({result(Reason::DroppedPositions, Status::Refuted), result(Reason::LossyValues, Status::Refuted)}).first == Grade::NotExact);
  CHECK(prove::grade_of({result(Reason::LossyValues, Status::Refuted), result(Reason::Collision, Status::Refuted)}).second == Reason::Collision);
  CHECK(prove::grade_of({result(Reason::Padding, Status::Refuted), result(Reason::SolverLimit, Status::Unknown)}).first == Grade::Unknown);
  CHECK(prove::grade_of({result(Reason::Collision, Status::Refuted), result(Reason::SolverLimit, Status::Unknown)}).first == Grade::Refused);
}

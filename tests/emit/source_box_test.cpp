// Boxes read as four page streams (emit/source_box.hpp): which box of paired 16-byte runs is staged on the
// stack, and in how many pieces it is streamed out; which box of 16-byte runs is staged into a slot pool's
// gathered rows; which box of longer runs is read in quarters; and what stops each. The kernels are checked against
// the byte oracle, with controls, in kernels_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "emit/source_box.hpp"

using namespace kvlayout;
using test::level_of;

namespace {

// The mode named `var`.
std::size_t mode_of(const emit::Cell& cell, const std::string& var) {
  for (std::size_t m = 0; m < cell.modes.size(); ++m)
    if (cell.modes[m].var == var) return m;
  FAIL("no mode " << var);
  return 0;
}

// The printer's first loop of its own: the two outermost are flattened across the threads.
constexpr std::size_t kFlat = 2;

}  // namespace

TEST_CASE("out of the legacy key cache into a token-major block, a whole block's packs are staged", "[emit][plan]") {
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
  REQUIRE(k.run_elements == 8);
  const auto box = emit::staged_runs(k, 2, kFlat);
  REQUIRE(box.has_value());
  CHECK(static_cast<int>(box->level) == level_of(k, "token_mod16"));
  CHECK(box->bytes == 16 * 8 * 128 * 2);  // 16 slots of 8 heads of 128 bf16
  std::vector<std::string> order;
  for (int m : box->source_order) order.push_back(k.modes[static_cast<std::size_t>(m)].var);
  CHECK(order == std::vector<std::string>{"head", "dim_div8", "token_mod16"});  // the source's [head, dim / 8, slot, 8]
  // Streamed out a box behind, a kilobyte per step: 2 steps of the quarters (8 heads / 4) by 16 of dim / 8.
  CHECK(emit::staged_runs_pieces(k, *box) == 32);
}

TEST_CASE("a staged box splits into pieces of whole 16-byte units per step of its two outer loops, or none", "[emit][plan]") {
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
  const auto box = emit::staged_runs(k, 2, kFlat);
  REQUIRE(box.has_value());
  SECTION("the control: the key box splits") { CHECK(emit::staged_runs_pieces(k, *box) == 32); }
  SECTION("a box whose pieces would not be whole 16-byte units is streamed out at once") {
    emit::SourceBox odd = *box;
    odd.bytes = 32 * 24;  // 24-byte pieces
    CHECK(emit::staged_runs_pieces(k, odd) == 0);
    odd.bytes = 32 * 16 + 8;  // no whole division
    CHECK(emit::staged_runs_pieces(k, odd) == 0);
  }
  SECTION("a box of one loop splits per quarter step") {
    emit::SourceBox one = *box;
    one.source_order.resize(1);
    CHECK(emit::staged_runs_pieces(k, one) == 2);
  }
}

TEST_CASE("boxes whose pairs are adjacent, whose runs are not 16 bytes, or that are not contiguous are not staged", "[emit][plan]") {
  SECTION("into the legacy cache: the pack index pairs with the slot innermost, nothing between (measured slower staged)") {
    const emit::Cell k = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy").cells[0];
    CHECK_FALSE(emit::staged_runs(k, 2, kFlat).has_value());
  }
  SECTION("256-byte runs do not pair") {
    for (const emit::Cell& c : test::cpu_plan("vllm-flash-nhd", "vllm-flash-hnd").cells) CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
  REQUIRE(emit::staged_runs(k, 2, kFlat).has_value());
  const std::size_t head = mode_of(k, "head"), token_mod16 = mode_of(k, "token_mod16");
  SECTION("the control: the unchanged cell is staged") { CHECK(emit::staged_runs(k, 2, kFlat).has_value()); }
  SECTION("a gap in the source box") {
    emit::Cell c = k;
    c.source.stride[head] *= 2;
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("a gap in the target box") {
    emit::Cell c = k;
    c.target.stride[token_mod16] += 8;
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("a box larger than kMostStagedBytes") {
    emit::Cell c = k;
    c.modes[head].extent = 16;  // the head outermost in the source, innermost but one in the target
    c.target.stride[token_mod16] = 16 * 128;
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("the source's outermost loop does not divide into quarters") {
    emit::Cell c = k;
    c.modes[head].extent = 6;
    c.target.stride[token_mod16] = 6 * 128;
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("a loop of the box reads a table (one the pairs do not use)") {
    emit::Cell c = k;
    emit::Atom a;
    a.coef = 1;
    a.modes = {static_cast<int>(head)};
    c.source.atoms.push_back(a);
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("a bound-checked coordinate with a digit outside the box below one inside") {
    emit::Cell c = k;
    const auto token = static_cast<std::size_t>(c.modes[token_mod16].coord);
    REQUIRE(c.coords[token].guarded);
    c.coords[token].modes.push_back(c.loops[0]);  // the layer, outside, as the token's lowest digit
    CHECK_FALSE(emit::staged_runs(c, 2, kFlat).has_value());
  }
  SECTION("the box starts no higher than the first level allowed") {
    const auto box = emit::staged_runs(k, 2, kFlat + 1);
    if (box) CHECK(box->level >= kFlat + 1);
  }
}

TEST_CASE("a block the plan walks in the source's order is read in quarters", "[emit][plan]") {
  const emit::Cell c = test::cpu_plan("vllm-flash-nhd", "vllm-flash-hnd").cells[0];
  REQUIRE(c.source_order_from >= 0);
  const auto box = emit::quartered_runs(c, 2, 2, kFlat);
  REQUIRE(box.has_value());
  CHECK(static_cast<int>(box->level) == level_of(c, "token_mod16"));
  CHECK(box->bytes == 16 * 8 * 128 * 2);
  CHECK(box->target_contiguous);
  std::vector<std::string> order;
  for (int m : box->source_order) order.push_back(c.modes[static_cast<std::size_t>(m)].var);
  CHECK(order == std::vector<std::string>{"token_mod16", "head"});  // the source's [slot, head, dim]
  SECTION("the control: unchanged, it is read in quarters") { CHECK(emit::quartered_runs(c, 2, 2, kFlat).has_value()); }
  SECTION("a block the plan walks in the target's order") {
    emit::Cell t = c;
    t.source_order_from = -1;
    CHECK_FALSE(emit::quartered_runs(t, 2, 2, kFlat).has_value());
  }
  SECTION("runs shorter than a line") {
    // The same block with runs of `elements`: 64 slots of 8 heads, source [slot, head, run], target [head, slot, run].
    auto with_run = [&](std::int64_t elements) {
      emit::Cell t = c;
      const std::size_t head = mode_of(t, "head"), slot = mode_of(t, "token_mod16");
      t.run_elements = elements;
      t.modes[slot].extent = 64;
      t.source.stride[head] = elements;
      t.source.stride[slot] = 8 * elements;
      t.target.stride[slot] = elements;
      t.target.stride[head] = 64 * elements;
      return t;
    };
    CHECK(emit::quartered_runs(with_run(32), 2, 2, kFlat).has_value());  // 64-byte runs: the control
    CHECK_FALSE(emit::quartered_runs(with_run(16), 2, 2, kFlat).has_value());
  }
  SECTION("a box of fewer than four pages") {
    emit::Cell t = c;
    const std::size_t head = mode_of(t, "head"), slot = mode_of(t, "token_mod16");
    t.modes[head].extent = 1;  // one head: 16 slots of 256 bytes, 4 KiB
    t.source.stride[slot] = 128;
    CHECK_FALSE(emit::quartered_runs(t, 2, 2, kFlat).has_value());
  }
  SECTION("an element conversion (other element sizes)") { CHECK_FALSE(emit::quartered_runs(c, 2, 1, kFlat).has_value()); }
}

TEST_CASE("a box that its enclosing loop continues in the source, four boxes or more, is read box after box, not in quarters", "[emit][plan]") {
  // vLLM 0.3.3's BLNHC block holds its 61 layers' 16 latent rows (18 KiB each) one after another: the box
  // of a layer's rows is one piece of the block's sequential span, and the layer loop walks it on.
  const emit::Cell c = test::cpu_plan("vllm033-mla-blnhc", "sglang0523-host-mla-page-first", "deepseek-v3").cells[0];
  REQUIRE(c.source_order_from >= 0);
  const int layer = level_of(c, "layer");
  REQUIRE(layer >= 1);
  REQUIRE(level_of(c, "token_mod16") == layer + 1);
  REQUIRE(emit::source_box(c, 2, static_cast<std::size_t>(layer) + 1).has_value());  // a box of four pages or more is there
  CHECK_FALSE(emit::quartered_runs(c, 2, 2, kFlat).has_value());
  SECTION("the control: an enclosing loop of fewer than four boxes (FlashInfer's K then V, one page) keeps the quarters") {
    // FlashInfer's 64 KiB page: the 32 KiB box of the K rows, then the V rows' box right after it.
    const emit::Cell k = test::cpu_plan("flashinfer-nhd", "trtllm-pool").cells[0];
    CHECK(emit::quartered_runs(k, 2, 2, kFlat).has_value());
  }
  SECTION("the control: runs of 256 bytes whose box the enclosing loop continues keep the quarters") {
    // Dynamo's universal block into vLLM 0.3.3's LHBNC cache: a head's K and V rows of each layer, 4 KiB
    // apiece, one after another (measured slower box after box: kLeastContinuedRunBytes).
    const emit::Cell d = test::cpu_plan("dynamo-universal", "vllm033-lhbnc").cells[0];
    REQUIRE(d.run_elements * 2 == 256);
    CHECK(emit::quartered_runs(d, 2, 2, kFlat).has_value());
  }
  SECTION("the control: the same box behind a step that is not the box's length keeps the quarters") {
    emit::Cell t = c;
    t.source.stride[static_cast<std::size_t>(t.loops[static_cast<std::size_t>(layer)])] += 64;  // a line between the layers' boxes
    CHECK(emit::quartered_runs(t, 2, 2, kFlat).has_value());
  }
}

TEST_CASE("out of the legacy key cache into a slot pool's token rows, a whole block's packs are staged row by row", "[emit][plan]") {
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "sglang-mha").cells[0];
  REQUIRE(k.run_elements == 8);
  const auto box = emit::staged_runs_into_rows(k, 2, kFlat);
  REQUIRE(box.has_value());
  CHECK(box->level == kFlat);
  CHECK(box->row_mode == static_cast<int>(mode_of(k, "token_mod16")));
  CHECK(box->bytes == 16 * 8 * 128 * 2);   // 16 slots of 8 heads of 128 bf16
  CHECK(box->row_bytes == 8 * 128 * 2);    // a slot's row: every head
  CHECK(emit::staged_runs_pieces(k, *box) == 0);  // streamed out row by row, not in pieces
  SECTION("the control: a token-major block's rows are not placed one by one, so not such a box") {
    const emit::Cell flash = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
    CHECK_FALSE(emit::staged_runs_into_rows(flash, 2, kFlat).has_value());
  }
  SECTION("a row loop that also steps the target by a stride is no row") {
    emit::Cell c = k;
    c.target.stride[mode_of(k, "token_mod16")] = 1024;
    CHECK_FALSE(emit::staged_runs_into_rows(c, 2, kFlat).has_value());
  }
  SECTION("a gap in a row") {
    emit::Cell c = k;
    c.target.stride[mode_of(k, "head")] *= 2;
    CHECK_FALSE(emit::staged_runs_into_rows(c, 2, kFlat).has_value());
  }
  SECTION("a row lookup that also reads an inner loop's mode places no whole row") {
    emit::Cell c = k;
    const int row = static_cast<int>(mode_of(k, "token_mod16"));
    std::size_t changed = 0;
    for (auto& a : c.target.atoms)
      if (std::find(a.modes.begin(), a.modes.end(), row) != a.modes.end()) a.modes.push_back(static_cast<int>(mode_of(k, "head"))), ++changed;
    REQUIRE(changed > 0);
    CHECK_FALSE(emit::staged_runs_into_rows(c, 2, kFlat).has_value());
  }
  SECTION("runs of a line or more are not staged") {
    emit::Cell c = k;
    c.run_elements = 32;
    CHECK_FALSE(emit::staged_runs_into_rows(c, 2, kFlat).has_value());
  }
}

TEST_CASE("out of a slot pool's token rows into the legacy key cache, a whole block's packs are staged out of its rows", "[emit][plan]") {
  const emit::Cell k = test::cpu_plan("sglang-mha", "vllm-paged-legacy").cells[0];
  REQUIRE(k.run_elements == 8);
  const auto box = emit::staged_runs_from_rows(k, 2, kFlat);
  REQUIRE(box.has_value());
  CHECK(box->rows_in_source);
  CHECK(box->row_mode == static_cast<int>(mode_of(k, "token_mod16")));
  CHECK(box->source_order.front() == box->row_mode);  // the rows first, then the modes within a row
  CHECK(box->bytes == 16 * 8 * 128 * 2);
  CHECK(box->row_bytes == 8 * 128 * 2);
  CHECK_FALSE(emit::staged_runs_into_rows(k, 2, kFlat).has_value());  // the target's rows are not placed one by one
  SECTION("the control: a token-major source's rows are not placed one by one, so not such a box") {
    const emit::Cell flash = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy").cells[0];
    CHECK_FALSE(emit::staged_runs_from_rows(flash, 2, kFlat).has_value());
  }
  SECTION("a gap in the target box") {
    emit::Cell c = k;
    c.target.stride[mode_of(k, "head")] *= 2;
    CHECK_FALSE(emit::staged_runs_from_rows(c, 2, kFlat).has_value());
  }
  SECTION("a row lookup that also reads another loop of the box places no whole row") {
    emit::Cell c = k;
    const int row = static_cast<int>(mode_of(k, "token_mod16"));
    std::size_t changed = 0;
    for (auto& a : c.source.atoms)
      if (std::find(a.modes.begin(), a.modes.end(), row) != a.modes.end()) a.modes.push_back(static_cast<int>(mode_of(k, "head"))), ++changed;
    REQUIRE(changed > 0);
    CHECK_FALSE(emit::staged_runs_from_rows(c, 2, kFlat).has_value());
  }
  SECTION("runs of a line or more are not staged") {
    emit::Cell c = k;
    c.run_elements = 32;
    CHECK_FALSE(emit::staged_runs_from_rows(c, 2, kFlat).has_value());
  }
}

// Paired 16-byte runs (emit/run_pairs.hpp): which loop pairs with the innermost one, and what stops it.
// The kernels that print the pairs are checked against the byte oracle with the rest (kernels_test.cpp,
// which also counts them).
#include <catch2/catch.hpp>

#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "emit/run_pairs.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;
using test::level_of;

namespace {

// The printer's first loop of its own: the two outermost are flattened across the threads.
constexpr std::size_t kFlat = 2;

}  // namespace

TEST_CASE("the legacy key cache's x-packs pair along the token in, and along the dim out", "[emit][plan]") {
  SECTION("out of legacy: the slot continues a pack in the source, the pack index in the target") {
    const emit::Plan plan = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd");
    REQUIRE(plan.cells.size() == 2);
    const emit::Cell& k = plan.cells[0];
    REQUIRE(k.run_elements == 8);
    REQUIRE(level_of(k, "token_mod16") >= 0);
    CHECK(emit::run_pairs_level(k, 2, kFlat) == level_of(k, "token_mod16"));
    CHECK(emit::run_pairs_level(plan.cells[1], 2, kFlat) == -1);  // V: a tile
  }
  SECTION("into legacy: the pack index continues it in the source, the slot in the target") {
    const emit::Plan plan = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy");
    const emit::Cell& k = plan.cells[0];
    REQUIRE(level_of(k, "dim_div8") >= 0);
    CHECK(emit::run_pairs_level(k, 2, kFlat) == level_of(k, "dim_div8"));
  }
}

TEST_CASE("runs that are not 16 bytes, or loops that do not continue them, do not pair", "[emit][plan]") {
  const emit::Plan whole_heads = test::cpu_plan("vllm-flash-nhd", "vllm-flash-hnd");  // 256-byte runs
  for (const emit::Cell& c : whole_heads.cells) CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
  const int paired = level_of(k, "token_mod16"), inner = static_cast<int>(k.loops.size()) - 1;
  REQUIRE(emit::run_pairs_level(k, 2, kFlat) == paired);
  const auto p = static_cast<std::size_t>(k.loops[static_cast<std::size_t>(paired)]);
  const auto i = static_cast<std::size_t>(k.loops[static_cast<std::size_t>(inner)]);
  SECTION("another element size: the run is not 16 bytes") { CHECK(emit::run_pairs_level(k, 4, kFlat) == -1); }
  SECTION("the paired loop does not continue the run in the source") {
    emit::Cell c = k;
    c.source.stride[p] += 8;
    CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  }
  SECTION("the innermost loop does not continue it in the target") {
    emit::Cell c = k;
    c.target.stride[i] *= 2;
    CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  }
  SECTION("an odd extent") {
    emit::Cell c = k;
    c.modes[p].extent = 15;
    CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  }
  SECTION("the paired loop is one the printer flattens") { CHECK(emit::run_pairs_level(k, 2, static_cast<std::size_t>(paired) + 1) == -1); }
  SECTION("a bound-checked coordinate with a digit in both loops") {
    emit::Cell c = k;
    const auto token = static_cast<std::size_t>(c.modes[p].coord);
    REQUIRE(c.coords[token].guarded);
    c.coords[token].modes.push_back(static_cast<int>(i));
    CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  }
  SECTION("a bound-checked coordinate with another digit inside the paired loop") {
    emit::Cell c = k;
    const int head = level_of(c, "head");
    REQUIRE((head > paired && head < inner));
    const auto token = static_cast<std::size_t>(c.modes[p].coord);
    c.coords[token].modes.push_back(c.loops[static_cast<std::size_t>(head)]);
    CHECK(emit::run_pairs_level(c, 2, kFlat) == -1);
  }
}

TEST_CASE("paired runs go four by four only out of a packed source, where both loops' extents divide by 4", "[emit][plan]") {
  const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
  const int paired = emit::run_pairs_level(k, 2, kFlat);
  REQUIRE(paired >= 0);
  const auto p = static_cast<std::size_t>(k.loops[static_cast<std::size_t>(paired)]);
  const auto i = static_cast<std::size_t>(k.loops.back());
  REQUIRE(k.modes[p].extent == 16);  // the slot
  REQUIRE(k.modes[i].extent == 16);  // the x-pack index: 128 dims in packs of 8
  CHECK(emit::run_group_side(k, paired) == 4);
  SECTION("the paired loop's extent is 2 mod 4") {
    emit::Cell c = k;
    c.modes[p].extent = 6;
    c.source.stride[i] = c.run_elements * 6;  // the source still packed, so only the extent decides
    CHECK(emit::run_group_side(c, paired) == 2);
  }
  SECTION("the innermost loop's extent is 2 mod 4") {
    emit::Cell c = k;
    c.modes[i].extent = 2;
    CHECK(emit::run_group_side(c, paired) == 2);
  }
  SECTION("into the legacy cache: the target holds the runs packed, the source does not") {
    const emit::Cell into = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy").cells[0];
    const int into_paired = emit::run_pairs_level(into, 2, kFlat);
    REQUIRE(into_paired >= 0);
    CHECK(emit::run_group_side(into, into_paired) == 2);
  }
}

TEST_CASE("four by four pairs of adjacent loops nest in source order, two by two and split nests in the target's", "[emit][plan]") {
  SECTION("into legacy from head rows: four by four, the pack loop right inside the slot loop") {
    const emit::Cell k = test::cpu_plan("vllm-flash-hnd", "vllm-paged-legacy").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(paired == level_of(k, "dim_div8"));
    REQUIRE(emit::run_group_side(k, paired) == 4);
    REQUIRE(static_cast<std::size_t>(paired) + 2 == k.loops.size());
    CHECK(emit::pairs_in_source_order(k, paired, 4));
  }
  SECTION("into legacy from token rows that hold every head: two by two keeps the target's order") {
    const emit::Cell k = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(emit::run_group_side(k, paired) == 2);
    CHECK_FALSE(emit::pairs_in_source_order(k, paired, 2));
  }
  SECTION("out of legacy into token rows: four by four with the head loop between, the target's order") {
    const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(emit::run_group_side(k, paired) == 4);
    REQUIRE(static_cast<std::size_t>(paired) + 2 < k.loops.size());
    CHECK_FALSE(emit::pairs_in_source_order(k, paired, 4));
  }
}

TEST_CASE("two-by-two pairs have a four-by-four nest where the CPU picks it, where both loops' extents divide by 4", "[emit][plan]") {
  SECTION("into legacy from K and V interleaved head rows (vLLM 0.33's packed pages): the source is not packed") {
    const emit::Cell k = test::cpu_plan("vllm033-lhbnc", "vllm-paged-legacy").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(paired >= 0);
    REQUIRE(emit::run_group_side(k, paired) == 2);
    CHECK(emit::quads_where_cpu_picks(k, paired));
  }
  SECTION("into legacy from token rows that hold every head") {
    const emit::Cell k = test::cpu_plan("vllm-flash-nhd", "vllm-paged-legacy").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(emit::run_group_side(k, paired) == 2);
    CHECK(emit::quads_where_cpu_picks(k, paired));
    SECTION("an extent 2 mod 4 has none") {
      emit::Cell c = k;
      c.modes[static_cast<std::size_t>(c.loops.back())].extent = 6;
      CHECK_FALSE(emit::quads_where_cpu_picks(c, paired));
      emit::Cell d = k;
      d.modes[static_cast<std::size_t>(d.loops[static_cast<std::size_t>(paired)])].extent = 6;
      CHECK_FALSE(emit::quads_where_cpu_picks(d, paired));
    }
  }
  SECTION("four by four everywhere (a packed source) needs no second nest") {
    const emit::Cell k = test::cpu_plan("vllm-paged-legacy", "vllm-flash-nhd").cells[0];
    const int paired = emit::run_pairs_level(k, 2, kFlat);
    REQUIRE(emit::run_group_side(k, paired) == 4);
    CHECK_FALSE(emit::quads_where_cpu_picks(k, paired));
  }
}

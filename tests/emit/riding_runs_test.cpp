// Runs riding a tile's row blocks (emit/riding_runs.hpp): which cells ride, which tiles fold their head,
// what the rider's loop variables are taken from, and the cases that must not ride. The kernels printed
// from such plans are checked against the byte oracle with the rest (kernels_test.cpp, which also holds
// the riders' controls).
#include <catch2/catch.hpp>

#include <algorithm>

#include "emit/pass_alignment.hpp"
#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "emit/riding_runs.hpp"

using namespace kvlayout;

namespace {

// The CPU printer's plan (aligned, then ridden), with every tile taken as printing straight blocks.
emit::Plan ridden(const emit::Plan& plan) {
  return emit::fold_riding_runs(emit::align_interleaved_passes(plan, 2), false, [](const emit::Cell&) { return true; });
}

int tile_cell(const emit::Plan& plan) {
  for (std::size_t c = 0; c < plan.cells.size(); ++c)
    if (plan.cells[c].tile_target_contiguous >= 0) return static_cast<int>(c);
  return -1;
}

}  // namespace

TEST_CASE("K beside V in a token row rides V's gathered row blocks, with the head folded into them", "[emit][plan]") {
  for (const char* source : {"vllm033-blnhc", "vllm-packed-nhd", "lmcache056-packed"}) {
    INFO(source);
    const emit::Plan declared = test::cpu_plan(source, "llamacpp-vtrans");
    const emit::Plan plan = ridden(declared);
    REQUIRE(plan.cells.size() == 2);
    const int v = tile_cell(plan), k = 1 - v;
    REQUIRE(v >= 0);
    const emit::Cell &tile = plan.cells[static_cast<std::size_t>(v)], &rider = plan.cells[static_cast<std::size_t>(k)];
    CHECK(tile.riders == std::vector<int>{k});
    CHECK(rider.ridden_by == v);
    // The head, the tile's innermost loop before, is folded: one loop fewer, everything else as it was.
    const emit::Cell& before = declared.cells[static_cast<std::size_t>(v)];
    REQUIRE(tile.tile_folded == before.loops.back());
    CHECK(tile.modes[static_cast<std::size_t>(tile.tile_folded)].var == "head");
    CHECK(tile.loops == std::vector<int>(before.loops.begin(), before.loops.end() - 1));
    CHECK(tile.tile_source_contiguous == before.tile_source_contiguous);
    CHECK(tile.tile_target_contiguous == before.tile_target_contiguous);
    CHECK(emit::in_tile(tile, tile.tile_folded));
    CHECK(rider.run == declared.cells[static_cast<std::size_t>(k)].run);
    // The rider's variables: the tile's layer, the folded head, the digits of the row's token.
    const std::optional<std::vector<std::string>> values = emit::rider_loop_values(plan, tile, rider, "t");
    REQUIRE(values);
    REQUIRE(values->size() == rider.loops.size());
    for (std::size_t l = 0; l < rider.loops.size(); ++l) {
      const std::string& var = rider.modes[static_cast<std::size_t>(rider.loops[l])].var;
      INFO(var);
      if (var == "layer" || var == "head") CHECK((*values)[l] == var);
      else CHECK((*values)[l].find("(t)") != std::string::npos);
    }
  }
}

TEST_CASE("a runs cell in another tensor, a block of heads away, or under a tile that cannot fold, converts or stages rides nothing", "[emit][plan]") {
  auto unchanged = [](const emit::Plan& a, const emit::Plan& b) {
    REQUIRE(a.cells.size() == b.cells.size());
    for (std::size_t c = 0; c < a.cells.size(); ++c) {
      CHECK(a.cells[c].loops == b.cells[c].loops);
      CHECK(b.cells[c].tile_folded == -1);
      CHECK(b.cells[c].riders.empty());
      CHECK(b.cells[c].ridden_by == -1);
    }
  };
  SECTION("vLLM's NHD cache: K in a tensor of its own") {
    const emit::Plan aligned = emit::align_interleaved_passes(test::cpu_plan("vllm-flash-nhd", "llamacpp-vtrans"), 2);
    unchanged(aligned, ridden(test::cpu_plan("vllm-flash-nhd", "llamacpp-vtrans")));
  }
  SECTION("FlashInfer's HND pages: K in the same tensor, a block of heads from V") {
    const emit::Plan aligned = emit::align_interleaved_passes(test::cpu_plan("flashinfer-hnd", "llamacpp-vtrans"), 2);
    unchanged(aligned, ridden(test::cpu_plan("flashinfer-hnd", "llamacpp-vtrans")));
  }
  SECTION("vLLM 0.33's bhlnc pages: the tile's innermost loop is the layer, which picks llama.cpp's tensor") {
    const emit::Plan aligned = emit::align_interleaved_passes(test::cpu_plan("vllm033-bhlnc", "llamacpp-vtrans"), 2);
    unchanged(aligned, ridden(test::cpu_plan("vllm033-bhlnc", "llamacpp-vtrans")));
  }
  SECTION("a tile with a staged alternative, or a converting move") {
    const emit::Plan aligned = emit::align_interleaved_passes(test::cpu_plan("vllm033-blnhc", "llamacpp-vtrans"), 2);
    unchanged(aligned, emit::fold_riding_runs(aligned, false, [](const emit::Cell&) { return false; }));
    unchanged(aligned, emit::fold_riding_runs(aligned, true, [](const emit::Cell&) { return true; }));
  }
}

TEST_CASE("a rider's runs must lie within one folded step of the tile's, in the same instances", "[emit][plan]") {
  const emit::Plan aligned = emit::align_interleaved_passes(test::cpu_plan("vllm033-blnhc", "llamacpp-vtrans"), 2);
  const int v = tile_cell(aligned), k = 1 - v;
  REQUIRE(v >= 0);
  const emit::Cell& tile = aligned.cells[static_cast<std::size_t>(v)];
  const std::int64_t step = tile.source.stride[static_cast<std::size_t>(tile.loops.back())];  // the head's: K 128 | V 128
  REQUIRE(step == 256);
  auto rides = [&](std::int64_t constant, std::int64_t instance_first) {
    emit::Plan edited = aligned;
    edited.cells[static_cast<std::size_t>(k)].source.constant = tile.source.constant + constant;
    edited.cells[static_cast<std::size_t>(k)].source.instance_first = instance_first;
    return ridden(edited).cells[static_cast<std::size_t>(k)].ridden_by == v;
  };
  const std::int64_t first = tile.source.instance_first;
  CHECK(rides(-128, first));  // as shipped: K just before V
  CHECK(rides(step - 1, first));
  CHECK(rides(-(step - 1), first));
  CHECK_FALSE(rides(step, first));
  CHECK_FALSE(rides(-step, first));
  CHECK_FALSE(rides(-128, first + 1));
}

TEST_CASE("a rider's loops map one to one onto the tile's, its folded head and a whole token, or it does not ride", "[emit][plan]") {
  const emit::Plan plan = ridden(test::cpu_plan("vllm033-blnhc", "llamacpp-vtrans"));
  const int v = tile_cell(plan), k = 1 - v;
  REQUIRE(v >= 0);
  const emit::Cell& tile = plan.cells[static_cast<std::size_t>(v)];
  const emit::Cell& rider = plan.cells[static_cast<std::size_t>(k)];
  REQUIRE(emit::rider_loop_values(plan, tile, rider, "t"));
  auto mode_of = [](const emit::Cell& c, const std::string& var) {
    for (std::size_t m = 0; m < c.modes.size(); ++m)
      if (c.modes[m].var == var) return static_cast<int>(m);
    return -1;
  };
  SECTION("a layer of another extent") {
    emit::Cell edited = rider;
    edited.modes[static_cast<std::size_t>(mode_of(edited, "layer"))].extent -= 1;
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("a layer range that starts elsewhere") {
    emit::Cell edited = rider;
    edited.coords[static_cast<std::size_t>(edited.modes[static_cast<std::size_t>(mode_of(edited, "layer"))].coord)].lo += 1;
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("a token range that is not the whole capacity") {
    emit::Cell edited = rider;
    edited.coords[static_cast<std::size_t>(plan.token_coord)].lo = 1;
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
    edited = rider;
    edited.coords[static_cast<std::size_t>(plan.token_coord)].hi -= 1;
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("token digits that do not compose the token") {
    emit::Cell edited = rider;
    edited.modes[static_cast<std::size_t>(mode_of(edited, "token_div16"))].weight = 8;  // digits overlap
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
    edited = rider;
    edited.modes[static_cast<std::size_t>(mode_of(edited, "token_div16"))].extent /= 2;  // short of the capacity
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("a token digit that is not a loop") {
    emit::Cell edited = rider;
    const int digit = mode_of(edited, "token_mod16");
    edited.loops.erase(std::find(edited.loops.begin(), edited.loops.end(), digit));
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("a rider without the head loop (the tile's folded head would repeat its runs)") {
    emit::Cell edited = rider;
    edited.loops.erase(std::find(edited.loops.begin(), edited.loops.end(), mode_of(edited, "head")));
    CHECK_FALSE(emit::rider_loop_values(plan, tile, edited, "t"));
  }
  SECTION("a tile whose rows are not an inverted table's slots, or not all of them") {
    const int slot_coord = tile.modes[static_cast<std::size_t>(tile.tile_target_contiguous)].coord;
    emit::Cell edited = tile;
    edited.coords[static_cast<std::size_t>(slot_coord)].inverse = -1;
    CHECK_FALSE(emit::rider_loop_values(plan, edited, rider, "t"));
    edited = tile;
    edited.coords[static_cast<std::size_t>(slot_coord)].guarded = true;
    CHECK_FALSE(emit::rider_loop_values(plan, edited, rider, "t"));
    edited = tile;
    edited.tile_guard = slot_coord;
    CHECK_FALSE(emit::rider_loop_values(plan, edited, rider, "t"));
    edited = tile;
    edited.modes[static_cast<std::size_t>(edited.tile_target_contiguous)].extent -= 1;
    CHECK_FALSE(emit::rider_loop_values(plan, edited, rider, "t"));
  }
}

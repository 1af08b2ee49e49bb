// Interleaved passes led by the tile's loops (emit/pass_alignment.hpp): which runs cells are reordered,
// and that nothing but their loops' order moves. The kernels printed from aligned plans are checked
// against the byte oracle with the rest (kernels_test.cpp, which also holds the alignment's control).
#include <catch2/catch.hpp>

#include <algorithm>

#include "emit/pass_alignment.hpp"
#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

// The coordinates of a cell's outermost `count` loops.
std::vector<int> leading_coords(const emit::Cell& c, std::size_t count) {
  std::vector<int> out;
  for (std::size_t l = 0; l < std::min(count, c.loops.size()); ++l) out.push_back(c.modes[static_cast<std::size_t>(c.loops[l])].coord);
  return out;
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

bool same_loops(const emit::Plan& a, const emit::Plan& b) {
  if (a.cells.size() != b.cells.size()) return false;
  for (std::size_t c = 0; c < a.cells.size(); ++c)
    if (a.cells[c].loops != b.cells[c].loops || a.cells[c].source_order_from != b.cells[c].source_order_from) return false;
  return true;
}

}  // namespace

TEST_CASE("a runs cell reading a tile's source pages is led by the tile's flattened loops, and nothing else moves", "[emit][plan]") {
  // vLLM 0.33's blhnc pages hold a head's K then its V per token; llama.cpp's K takes 256-byte runs, its
  // transposed V a tile over the inverted cell table, walked (layer, head) outermost.
  const emit::Plan plan = test::cpu_plan("vllm033-blhnc", "llamacpp-vtrans");
  REQUIRE(plan.cells.size() == 2);
  const emit::Cell &k = plan.cells[0], &v = plan.cells[1];
  REQUIRE(k.tile_target_contiguous < 0);
  REQUIRE(v.tile_target_contiguous >= 0);
  REQUIRE(leading_coords(k, 2) != leading_coords(v, 2));  // K's own order starts with the token's blocks
  const emit::Plan aligned = emit::align_interleaved_passes(plan, 2);
  const emit::Cell &ak = aligned.cells[0], &av = aligned.cells[1];
  CHECK(leading_coords(ak, 2) == leading_coords(v, 2));
  CHECK(sorted(ak.loops) == sorted(k.loops));
  CHECK(ak.run == k.run);
  CHECK(ak.run_elements == k.run_elements);
  CHECK(ak.source_order_from == -1);
  CHECK(ak.target_order_loops.empty());
  // The rest keep their order among themselves (the token's digits, most significant first).
  std::vector<int> rest_before, rest_after(ak.loops.begin() + 2, ak.loops.end());
  for (int l : k.loops)
    if (std::find(ak.loops.begin(), ak.loops.begin() + 2, l) == ak.loops.begin() + 2) rest_before.push_back(l);
  CHECK(rest_after == rest_before);
  CHECK(av.loops == v.loops);
  CHECK(av.tile_target_contiguous == v.tile_target_contiguous);
  CHECK(av.tile_source_contiguous == v.tile_source_contiguous);
  // Aligning again changes nothing.
  CHECK(same_loops(emit::align_interleaved_passes(aligned, 2), aligned));
}

TEST_CASE("cells whose sources lie apart, or already led by the tile, keep their order", "[emit][plan]") {
  SECTION("K and V in tensors of their own (HF's per-layer key and value tensors)") {
    const emit::Plan plan = test::cpu_plan("hf-dynamic", "llamacpp-vtrans");
    CHECK(same_loops(emit::align_interleaved_passes(plan, 2), plan));
  }
  SECTION("K's x-packs beside legacy V's tiles, both led by (layer, token block) already") {
    const emit::Plan plan = test::cpu_plan("vllm-packed-nhd", "vllm-paged-legacy");
    REQUIRE(plan.cells.size() == 2);
    REQUIRE(leading_coords(plan.cells[0], 2) == leading_coords(plan.cells[1], 2));
    CHECK(same_loops(emit::align_interleaved_passes(plan, 2), plan));
  }
  SECTION("the same pair with V's source moved a page away from K's") {
    emit::Plan plan = test::cpu_plan("vllm033-blhnc", "llamacpp-vtrans");
    REQUIRE(plan.cells.size() == 2);
    plan.cells[1].source.constant += 4096 / 2;
    CHECK(same_loops(emit::align_interleaved_passes(plan, 2), plan));
    plan.cells[1].source.constant -= 4096 / 2;  // the control: back within the page, K is reordered
    CHECK_FALSE(same_loops(emit::align_interleaved_passes(plan, 2), plan));
  }
}

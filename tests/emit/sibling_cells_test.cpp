// Sibling groups (emit/sibling_cells.hpp): which cells one loop nest moves together, and what keeps two
// cells apart. The kernels a group prints are checked against the byte oracle with the rest
// (kernels_test.cpp, which also holds the group's control).
#include <catch2/catch.hpp>

#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "emit/sibling_cells.hpp"
#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

int coordinate(const emit::Cell& c, const std::string& name) {
  for (std::size_t i = 0; i < c.coords.size(); ++i)
    if (c.coords[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST_CASE("K and V of a page that interleaves them per head are one nest: V's run at + head_size, into the V buffers", "[emit][plan]") {
  const emit::Plan plan = test::cpu_plan("vllm033-lbnhc", "sglang-mha", "llama-3.1-8b");
  REQUIRE(plan.cells.size() == 2);
  const auto groups = emit::sibling_groups(plan, 2, 2);
  REQUIRE(groups.size() == 1);
  REQUIRE(groups[0].size() == 2);
  const emit::Sibling &k = groups[0][0], &v = groups[0][1];
  CHECK(k.cell == 0);
  CHECK((k.source_shift == 0 && k.target_shift == 0 && k.source_instance_shift == 0 && k.target_instance_shift == 0));
  CHECK(v.cell == 1);
  CHECK(v.source_shift == 128);         // C = K's 128 elements, then V's
  CHECK(v.target_shift == 0);
  CHECK(v.source_instance_shift == 0);  // one backing buffer
  CHECK(v.target_instance_shift == 32); // v_buffer[layer] after the 32 k_buffer[layer]
}

TEST_CASE("cells that differ in more than constants stay apart", "[emit][plan]") {
  const emit::Plan plan = test::cpu_plan("vllm033-lbnhc", "sglang-mha", "llama-3.1-8b");
  const emit::Cell &a = plan.cells[0], &b = plan.cells[1];
  REQUIRE(emit::same_nest(a, b));
  REQUIRE(emit::same_nest(b, a));
  const int kv = coordinate(b, "kv");
  REQUIRE(kv >= 0);
  REQUIRE(b.coords[static_cast<std::size_t>(kv)].lo != a.coords[static_cast<std::size_t>(kv)].lo);  // the shifted coordinate
  SECTION("a source stride") {
    emit::Cell c = b;
    c.source.stride[static_cast<std::size_t>(c.loops.back())] += 1;
    CHECK_FALSE(emit::same_nest(a, c));
  }
  SECTION("a target lookup's coefficient") {
    emit::Cell c = b;
    REQUIRE_FALSE(c.target.atoms.empty());
    c.target.atoms[0].coef *= 2;
    CHECK_FALSE(emit::same_nest(a, c));
  }
  SECTION("a target lookup's expression") {
    emit::Cell c = b;
    c.target.atoms[0].e = expr::make(expr::Op::Add, {c.target.atoms[0].e, expr::literal(1)});
    CHECK_FALSE(emit::same_nest(a, c));
  }
  SECTION("the shifted coordinate bound-checked") {
    emit::Cell x = a, y = b;
    x.coords[static_cast<std::size_t>(kv)].guarded = y.coords[static_cast<std::size_t>(kv)].guarded = true;
    CHECK_FALSE(emit::same_nest(x, y));
  }
  SECTION("the shifted coordinate selecting the target instance") {
    emit::Cell x = a, y = b;
    x.target.instance_coord = y.target.instance_coord = kv;
    CHECK_FALSE(emit::same_nest(x, y));
  }
  SECTION("the shifted coordinate feeding a lookup") {
    emit::Cell x = a, y = b;
    const auto& modes = x.coords[static_cast<std::size_t>(kv)].modes;
    REQUIRE_FALSE(modes.empty());
    x.source.atoms[0].modes.push_back(modes[0]);
    y.source.atoms[0].modes.push_back(modes[0]);
    CHECK_FALSE(emit::same_nest(x, y));
  }
  SECTION("a coordinate range of another length") {
    emit::Cell c = b;
    c.coords[static_cast<std::size_t>(kv)].hi += 1;
    CHECK_FALSE(emit::same_nest(a, c));
  }
  SECTION("a tile") {
    emit::Cell c = b;
    c.tile_target_contiguous = c.loops.back();
    CHECK_FALSE(emit::same_nest(a, c));
  }
  SECTION("a target shift off a 16-byte boundary keeps the member alone") {
    emit::Plan p = plan;
    p.cells[1].target.constant += 1;
    CHECK(emit::sibling_groups(p, 2, 2).size() == 2);
  }
}

TEST_CASE("legacy K (x-packs) and V (token-fastest) are two nests, and every cell is in one group", "[emit][plan]") {
  for (const auto& [s, t] : std::vector<std::pair<std::string, std::string>>{
           {"vllm-packed-nhd", "vllm-paged-legacy"}, {"vllm-flash-nhd", "sglang-mha"}, {"lmcache-2ltd", "vllm-flash-nhd"}, {"sglang-mha", "vllm033-lhbnc"}}) {
    INFO(s << " -> " << t);
    const emit::Plan plan = test::cpu_plan(s, t, "small");
    const auto groups = emit::sibling_groups(plan, 2, 2);
    std::vector<int> seen(plan.cells.size(), 0);
    for (const auto& g : groups) {
      REQUIRE_FALSE(g.empty());
      CHECK((g[0].source_shift == 0 && g[0].target_shift == 0 && g[0].source_instance_shift == 0 && g[0].target_instance_shift == 0));
      for (const auto& m : g) ++seen[static_cast<std::size_t>(m.cell)];
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    if (t == "vllm-paged-legacy") CHECK(groups.size() == plan.cells.size());
  }
}

TEST_CASE("K and V join one nest only where they share pages on one side", "[emit][plan]") {
  // HF's and SGLang's K and V are tensors of their own on both sides: two nests (one nest measured slower).
  const emit::Plan apart = test::cpu_plan("hf-dynamic", "sglang-mha", "llama-3.1-8b");
  REQUIRE(apart.cells.size() == 2);
  REQUIRE(emit::same_nest(apart.cells[0], apart.cells[1]));
  CHECK(emit::sibling_groups(apart, 2, 2).size() == 2);
  // Into vLLM 0.33's packed pages, K and V of a head share the target's pages: one nest.
  const emit::Plan into_packed = test::cpu_plan("sglang-mha", "vllm033-lbnhc", "llama-3.1-8b");
  REQUIRE(into_packed.cells.size() == 2);
  const auto groups = emit::sibling_groups(into_packed, 2, 2);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0][1].target_shift == 128);
  CHECK(groups[0][1].source_instance_shift == 32);
  // Both walk SGLang's token-pool slots (the source read in its own order, plan phase 6b): one inverse, one
  // nest over it, both runs per slot.
  REQUIRE(into_packed.inverses.size() == 1);
  for (const auto& c : into_packed.cells) {
    const int slot = coordinate(c, "slot");
    REQUIRE(slot >= 0);
    CHECK(c.coords[static_cast<std::size_t>(slot)].inverse == into_packed.inverses[0].source_index);
  }
}

TEST_CASE("cells over different inverted tables, or one inverted and one not, stay apart", "[emit][plan]") {
  const emit::Plan plan = test::cpu_plan("sglang-mha", "vllm033-lbnhc", "llama-3.1-8b");
  REQUIRE(plan.cells.size() == 2);
  const emit::Cell &a = plan.cells[0], &b = plan.cells[1];
  REQUIRE(emit::same_nest(a, b));
  const int slot = coordinate(b, "slot");
  REQUIRE(slot >= 0);
  emit::Cell c = b;
  SECTION("another inverse") { c.coords[static_cast<std::size_t>(slot)].inverse += 1; }
  SECTION("no inverse") { c.coords[static_cast<std::size_t>(slot)].inverse = -1; }
  CHECK_FALSE(emit::same_nest(a, c));
  CHECK_FALSE(emit::same_nest(c, a));
}

TEST_CASE("K and V whose source spans abut are one nest, into target tensors of their own", "[emit][plan]") {
  // Dynamo's universal block holds a head's 16 token rows of K (16 x 128 elements), then its V: 4 KiB
  // apart on llama-3.1-8b, not within a page, but abutting. FlashInfer's HND page holds its 8 heads' K rows,
  // then their V: 32 KiB apart.
  for (const auto& [source, span] : std::vector<std::pair<std::string, std::int64_t>>{{"dynamo-universal", 16 * 128}, {"flashinfer-hnd", 8 * 16 * 128}}) {
    INFO(source << " -> hf-dynamic");
    const emit::Plan plan = test::cpu_plan(source, "hf-dynamic", "llama-3.1-8b");
    REQUIRE(plan.cells.size() == 2);
    CHECK(emit::source_span_elements(plan.cells[0]) == span);
    CHECK_FALSE(emit::within_a_page(plan.cells[0].source, plan.cells[1].source, 2));
    CHECK(emit::source_spans_abut(plan.cells[0], plan.cells[1]));
    const auto groups = emit::sibling_groups(plan, 2, 2);
    REQUIRE(groups.size() == 1);
    REQUIRE(groups[0].size() == 2);
    CHECK(groups[0][1].source_shift == span);
    CHECK(groups[0][1].source_instance_shift == 0);
    CHECK(groups[0][1].target_instance_shift == 32);  // value_cache[layer] after the 32 key_cache[layer]
  }
}

TEST_CASE("spans that do not abut on the source side keep K and V apart", "[emit][plan]") {
  SECTION("V's source one element past K's span's end (the control)") {
    emit::Plan plan = test::cpu_plan("dynamo-universal", "hf-dynamic", "llama-3.1-8b");
    REQUIRE(emit::sibling_groups(plan, 2, 2).size() == 1);
    plan.cells[1].source.constant += 1;
    CHECK_FALSE(emit::source_spans_abut(plan.cells[0], plan.cells[1]));
    CHECK(emit::sibling_groups(plan, 2, 2).size() == 2);
  }
  SECTION("spans abutting on the target side only: HF's K and V are source tensors of their own") {
    // Joined, such nests measured slower (sibling_cells.hpp): two read streams.
    for (const std::string target : {"dynamo-universal", "lmcache-2ltd"}) {
      INFO("hf-dynamic -> " << target);
      const emit::Plan plan = test::cpu_plan("hf-dynamic", target, "llama-3.1-8b");
      REQUIRE(plan.cells.size() == 2);
      REQUIRE(emit::same_nest(plan.cells[0], plan.cells[1]));
      CHECK_FALSE(emit::source_spans_abut(plan.cells[0], plan.cells[1]));
      CHECK(emit::sibling_groups(plan, 2, 2).size() == 2);
    }
  }
}

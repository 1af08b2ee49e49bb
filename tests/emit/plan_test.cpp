// The move plan: what "fast by construction" means, checked on the plan itself.
#include <array>
#include <catch2/catch.hpp>
#include <algorithm>
#include <regex>
#include <sstream>
#include <tuple>

#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "emit/plan_fixture.hpp"
#include "emit/statements.hpp"
#include "prove/proof.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;
using test::level_of;

namespace {

struct Planned {
  layout::BoundLayout source, target;
  emit::Plan plan;
};

Planned plan_for(const std::string& s, const std::string& t, const std::string& cache, const emit::PlanOptions& options = {}) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto c = spec::load_cache(catalog.find_cache(cache).string());
  Planned p{layout::bind(spec::load_layout(catalog.find_layout(s).string()), c),
            layout::bind(spec::load_layout(catalog.find_layout(t).string()), c), {}};
  p.plan = emit::make_plan(p.source, p.target, options);
  return p;
}

const emit::PlanOptions kCpuPlan = emit::kCpuPlanOptions;

std::vector<std::string> loop_names(const emit::Cell& cell) {
  std::vector<std::string> out;
  for (int m : cell.loops) out.push_back(cell.modes[static_cast<std::size_t>(m)].var);
  return out;
}

// The CPU kernel emitted for a planned pair.
std::string kernel_code(const Planned& p) {
  return emit::emit_kernel(prove::prove(p.source.layout, p.target.layout, p.source.cache), emit::EmitOptions{});
}

// The loops inside a cell's block: those inside the loop `block_var`, one of whose iterations reads more
// than a prefetch reaches (kFarthestPrefetchBytes).
std::vector<int> loops_inside_far_block(const emit::Cell& c, const std::string& block_var) {
  const int block = level_of(c, block_var);
  REQUIRE(block >= 0);
  REQUIRE(emit::bytes_per_iteration(c, block, 2) > emit::kFarthestPrefetchBytes);
  return std::vector<int>(c.loops.begin() + block + 1, c.loops.end());
}

// The plan's first tile cell, or null.
const emit::Cell* first_tile(const emit::Plan& plan) {
  for (const emit::Cell& c : plan.cells)
    if (c.tile_target_contiguous >= 0) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("NHD -> HND: a 128-element run, lookups hoisted, each block read in the source's order", "[emit][plan]") {
  auto p = plan_for("vllm-flash-nhd", "vllm-flash-hnd", "llama-3.1-70b");
  REQUIRE(p.plan.cells.size() == 1);
  const auto& c = p.plan.cells[0];
  CHECK(c.run_elements == 128);
  // Runs are 256 bytes, whole target lines: inside a block the slot and head loops follow the source.
  CHECK(loop_names(c) == std::vector<std::string>{"layer", "kv", "token_div16", "token_mod16", "head"});
  CHECK(c.source_order_from == 3);
  // Both block-table lookups read only the block digit: computed once per block, not per element.
  for (const auto* side : {&c.source, &c.target}) {
    REQUIRE(side->atoms.size() == 1);
    CHECK(side->atoms[0].modes.size() == 1);
    CHECK(c.modes[static_cast<std::size_t>(side->atoms[0].modes[0])].var == "token_div16");
  }
}

TEST_CASE("dense-in-both runs are coalesced: NHD -> LMCache copies 1024 elements (heads x dims) at once", "[emit][plan]") {
  auto p = plan_for("vllm-flash-nhd", "lmcache-2ltd", "llama-3.1-8b");
  REQUIRE(p.plan.cells.size() == 1);
  CHECK(p.plan.cells[0].run_elements == 8 * 128);
  // Whole target lines written in one stream whatever the order: the loops follow the source, whose layers
  // are tensors of their own (the target's order would be kv, layer, ...).
  CHECK(loop_names(p.plan.cells[0]) == std::vector<std::string>{"layer", "kv", "token_div16", "token_mod16"});
  CHECK(p.plan.cells[0].source_order_from == 0);
}

TEST_CASE("two block sizes split the token into digits of both (TRT-LLM's 32 over vLLM's 16)", "[emit][plan]") {
  auto p = plan_for("trtllm-pool", "vllm-flash-nhd", "llama-3.1-8b");
  REQUIRE(p.plan.cells.size() == 1);
  auto names = loop_names(p.plan.cells[0]);
  CHECK(std::find(names.begin(), names.end(), "token_div32") != names.end());
  CHECK(std::find(names.begin(), names.end(), "token_div16_mod2") != names.end());
  CHECK(std::find(names.begin(), names.end(), "token_mod16") != names.end());
}

TEST_CASE("the legacy token-fastest V cache is moved in 8 x 8 tiles along the coalesced head*dim axis", "[emit][plan]") {
  auto p = plan_for("vllm-paged-legacy", "vllm-flash-nhd", "llama-3.1-8b");
  REQUIRE(p.plan.cells.size() == 2);
  const auto& k = p.plan.cells[0];
  const auto& v = p.plan.cells[1];
  CHECK(k.run_elements == 8);  // x-packed key: 16-byte runs
  CHECK(v.tile_target_contiguous >= 0);
  CHECK(v.modes[static_cast<std::size_t>(v.tile_source_contiguous)].var == "token_mod16");
  CHECK(v.tile_target_extent == 8 * 128);
  CHECK(v.tile_guard >= 0);  // the token is checked per tile
}

TEST_CASE("legacy V into SGLang's token pool: tiles along token % 16 whose target rows are placed by the pool's table", "[emit][plan]") {
  auto p = plan_for("vllm-paged-legacy", "sglang-mha", "llama-3.1-8b");
  REQUIRE(p.plan.cells.size() == 2);
  const auto& v = p.plan.cells[1];
  REQUIRE(v.tile_target_contiguous >= 0);
  CHECK(v.modes[static_cast<std::size_t>(v.tile_source_contiguous)].var == "token_mod16");
  CHECK(v.tile_target_rows_gathered);
  CHECK_FALSE(v.tile_source_rows_gathered);
  CHECK(v.tile_target_extent == 8 * 128);  // head*dim, coalesced: each target row is a token's 2 KiB
  CHECK(v.tile_guard >= 0);
  // The pool's lookup reads the tile mode: it is evaluated per row, not at a loop level.
  bool row_lookup = false;
  for (const auto& a : v.target.atoms) row_lookup = row_lookup || emit::reads_tile_mode(v, a);
  CHECK(row_lookup);
  CHECK(v.tile_source_merged.empty());  // the down axis is coalesced only for gathered source rows
  CHECK(v.tile_source_extent == 16);
  // The reverse move gathers its source rows instead: nothing is coalesced along the gathered (across)
  // axis, and head joins dim along the down axis, so each gathered row (a token's 2 KiB) is read whole.
  auto back = plan_for("sglang-mha", "vllm-paged-legacy", "llama-3.1-8b");
  const auto& b = back.plan.cells[1];
  REQUIRE(b.tile_target_contiguous >= 0);
  CHECK(b.tile_source_rows_gathered);
  CHECK_FALSE(b.tile_target_rows_gathered);
  CHECK(b.tile_target_merged.empty());
  CHECK(b.modes[static_cast<std::size_t>(b.tile_source_contiguous)].var == "dim");
  REQUIRE(b.tile_source_merged.size() == 1);
  const int head = b.tile_source_merged[0];
  CHECK(b.modes[static_cast<std::size_t>(head)].var == "head");
  CHECK(b.tile_source_extent == 8 * 128);
  CHECK(emit::in_tile(b, head));
  CHECK(std::find(b.loops.begin(), b.loops.end(), head) == b.loops.end());
  CHECK(emit::describe(back.plan, back.source, back.target).find("head*dim (source-contiguous)") != std::string::npos);
  // Its strides continue dim's in both layouts: the source row's next 128 elements, the target's next
  // 128 rows of 16 tokens.
  CHECK(b.source.stride[static_cast<std::size_t>(head)] == 128);
  CHECK(b.target.stride[static_cast<std::size_t>(head)] == b.target.stride[static_cast<std::size_t>(b.tile_source_contiguous)] * 128);
}

TEST_CASE("a tile into a per-layer target from a source holding a token's layers together walks the source's order", "[emit][plan]") {
  // SGLang's page_head host pool holds [page][head][token][layer][dim]; the legacy vLLM cache is a tensor a
  // layer. The target's order would pick the layer outermost and read each source page in 32 passes.
  const emit::Cell into_layers = test::cpu_plan("sglang-host-page-head", "vllm-paged-legacy").cells[1];
  REQUIRE(into_layers.tile_target_contiguous >= 0);
  CHECK(level_of(into_layers, "token_div64") == 0);
  CHECK(level_of(into_layers, "layer") == static_cast<int>(into_layers.loops.size()) - 1);
  CHECK(level_of(into_layers, "head") < level_of(into_layers, "token_div16_mod4"));  // the source's order, not the target's
  // The controls keep the target's order: the source picks its tensor by the layer too (HF's per-layer
  // tensors), or the source alone does (the legacy cache into vLLM 0.3.3's cross-layer blocks).
  const emit::Cell both_per_layer = test::cpu_plan("hf-dynamic", "vllm-paged-legacy").cells[1];
  REQUIRE(both_per_layer.tile_target_contiguous >= 0);
  CHECK(level_of(both_per_layer, "layer") == 0);
  const emit::Cell from_layers = test::cpu_plan("vllm-paged-legacy", "vllm033-lhbnc").cells[1];
  REQUIRE(from_layers.tile_target_contiguous >= 0);
  CHECK(level_of(from_layers, "layer") == 0);
  CHECK(level_of(from_layers, "head") == 1);
}

TEST_CASE("elements a table places one by one in the source are walked in the source's order, its rows outermost", "[emit][plan]") {
  // llama.cpp's transposed V: a row of cells per layer and head dim, each cell placed by the cells table.
  // Into vLLM's legacy value blocks the target's order would take a block at a time (reading 16 cells of
  // each of the layer's 1024 rows per block); the source's order takes a row at a time.
  const emit::Cell from_rows = test::cpu_plan("llamacpp-vtrans", "vllm-paged-legacy").cells[1];
  REQUIRE(from_rows.run_elements == 1);
  REQUIRE(from_rows.tile_target_contiguous < 0);
  CHECK(level_of(from_rows, "layer") == 0);
  CHECK(level_of(from_rows, "head") == 1);
  CHECK(level_of(from_rows, "dim") == 2);
  CHECK(level_of(from_rows, "token_div16") == 3);  // the target's order put the block at 1, before the head
  CHECK(level_of(from_rows, "token_mod16") == 4);
  // No prefetch: the next cell lies in the row being read (statements.hpp's prefetch_step skips a table
  // that places single elements).
  CHECK(emit::prefetch_step(from_rows, 2).level == -1);
  // The control: the other way round the table places the target's elements, and the target's order (a
  // llama.cpp row at a time) stands, with the next legacy block prefetched through its table.
  const emit::Cell into_rows = test::cpu_plan("vllm-paged-legacy", "llamacpp-vtrans").cells[1];
  REQUIRE(into_rows.run_elements == 1);
  CHECK(level_of(into_rows, "head") == 1);
  CHECK(level_of(into_rows, "token_div16") == 3);
  CHECK(emit::prefetch_step(into_rows, 2).level == level_of(into_rows, "token_div16"));
}

TEST_CASE("16-byte runs into a per-layer target sink the layer loop to just outside their pairs, past a stride", "[emit][plan]") {
  // The legacy key cache's packs from SGLang's page_head host pool: the target's order with the layer moved
  // in past the page's table, the token group and the head, to just outside dim_div8 and token_mod16.
  const emit::Cell sunk = test::cpu_plan("sglang-host-page-head", "vllm-paged-legacy").cells[0];
  REQUIRE(sunk.run_elements == 8);
  const int last = static_cast<int>(sunk.loops.size()) - 1;
  CHECK(level_of(sunk, "token_div64") == 0);
  CHECK(level_of(sunk, "layer") == last - 2);
  CHECK(level_of(sunk, "dim_div8") == last - 1);
  CHECK(level_of(sunk, "token_mod16") == last);
  // Controls: past the block's table alone (TRT-LLM's pool keeps a block's layers together) the layer stays
  // outermost; a source whose layer steps furthest (LMCache's layer-major chunk) keeps it there too.
  CHECK(level_of(test::cpu_plan("trtllm-pool", "vllm-paged-legacy").cells[0], "layer") == 0);
  CHECK(level_of(test::cpu_plan("lmcache-2ltd", "vllm-paged-legacy").cells[0], "layer") == 0);
}

TEST_CASE("16-byte runs out of a per-layer source hoist the layer loop above a token's packs, each layer's block read whole", "[emit][plan]") {
  // The legacy key cache's packs into SGLang's page_first host pool (a token's layers together): the
  // target's order walked four tokens across every layer; the layer now goes above token_mod16, just
  // inside the source block's table.
  const emit::Cell hoisted = test::cpu_plan("vllm-paged-legacy", "sglang-host-page-first").cells[0];
  REQUIRE(hoisted.run_elements == 8);
  CHECK(level_of(hoisted, "token_div16_mod4") == 1);
  CHECK(level_of(hoisted, "layer") == 2);
  CHECK(level_of(hoisted, "token_mod16") == 3);
  const emit::Cell page_head = test::cpu_plan("vllm-paged-legacy", "sglang-host-page-head").cells[0];
  CHECK(level_of(page_head, "layer") < level_of(page_head, "token_mod16"));
  CHECK(level_of(page_head, "token_div16_mod4") < level_of(page_head, "layer"));  // not past the table
  // Controls: where the loop it would pass steps over whole pieces of the source (Dynamo's blocks, head by
  // head, 4 KiB each), the layer stays inside the head; the mirror image (into the legacy cache) is phase
  // 5d's and keeps its layer below the token group.
  const emit::Cell whole_pieces = test::cpu_plan("vllm-paged-legacy", "dynamo-universal").cells[0];
  CHECK(level_of(whole_pieces, "head") < level_of(whole_pieces, "layer"));
  const emit::Cell into_layers = test::cpu_plan("sglang-host-page-first", "vllm-paged-legacy").cells[0];
  CHECK(level_of(into_layers, "layer") > level_of(into_layers, "token_div16_mod4"));
}

TEST_CASE("llama.cpp's transposed V is moved over the inverted cell table's slots, and only in the CPU plan", "[emit][plan]") {
  for (const auto& [source, target, inverted_side_is_source] :
       {std::tuple{"llamacpp-vtrans", "vllm-flash-nhd", true}, std::tuple{"vllm-flash-nhd", "llamacpp-vtrans", false}}) {
    INFO(source << " -> " << target);
    // The plan the checkers and the CUDA printer read: the declared coordinates, V element by element.
    auto declared = plan_for(source, target, "llama-3.1-8b");
    REQUIRE(declared.plan.cells.size() == 2);
    CHECK(declared.plan.inverses.empty());
    CHECK(declared.plan.cells[1].run_elements == 1);
    CHECK(declared.plan.cells[1].tile_target_contiguous < 0);
    // The CPU plan: V iterates the kv_size slots of `cells`, each token read back from the inverse.
    auto p = plan_for(source, target, "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.inverses.size() == 1);
    const emit::InverseTable& inverse = p.plan.inverses[0];
    CHECK(inverse.on_source == inverted_side_is_source);
    CHECK(inverse.slots == p.plan.capacity);  // kv_size = num_tokens
    CHECK(inverse.source_index == 1);  // after each side's one table
    CHECK(inverse.target_index == 1);
    const auto& k = p.plan.cells[0];
    CHECK(k.run_elements == 1024);  // K keeps its per-token runs
    // ... read in the source's order where the cells table places them (phase 6b), else by token.
    const auto& k_token = k.coords[static_cast<std::size_t>(p.plan.token_coord)];
    CHECK(k_token.inverse == (inverted_side_is_source ? inverse.source_index : -1));
    for (const auto& cc : k.coords)
      if (&cc != &k_token) CHECK(cc.inverse < 0);
    const auto& v = p.plan.cells[1];
    const auto& slot = v.coords[static_cast<std::size_t>(p.plan.token_coord)];
    CHECK(slot.name == "slot");
    CHECK(slot.inverse == inverse.source_index);
    CHECK(slot.lo == 0);
    CHECK(slot.hi == p.plan.capacity - 1);
    CHECK_FALSE(slot.guarded);  // present where the inverse holds a token, not below num_tokens
    REQUIRE(v.tile_target_contiguous >= 0);
    const int along_slot = inverted_side_is_source ? v.tile_source_contiguous : v.tile_target_contiguous;
    CHECK(v.modes[static_cast<std::size_t>(along_slot)].var == "slot");
    CHECK(v.tile_target_rows_gathered == inverted_side_is_source);
    CHECK(v.tile_source_rows_gathered == !inverted_side_is_source);
    // head*dim is one axis either way: coalesced along the target rows, or along the gathered source rows.
    CHECK((inverted_side_is_source ? v.tile_target_extent : v.tile_source_extent) == 8 * 128);
    CHECK(emit::describe(p.plan, p.source, p.target).find("inverted") != std::string::npos);
  }
}

TEST_CASE("a TP shard target moves only its heads, as one run", "[emit][plan]") {
  auto p = plan_for("vllm-flash-nhd", "vllm-flash-nhd-tp2-r1", "llama-3.1-70b");
  REQUIRE(p.plan.cells.size() == 1);
  const auto& c = p.plan.cells[0];
  CHECK(c.coords[3].lo == 4);
  CHECK(c.coords[3].hi == 7);
  CHECK(c.run_elements == 4 * 128);
}

TEST_CASE("the emitted header records the proof facts and the ABI", "[emit][header]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  auto proof = prove::prove(spec::load_layout(catalog.find_layout("vllm-flash-nhd").string()),
                            spec::load_layout(catalog.find_layout("sglang-mha").string()), small);
  for (auto target : {emit::Target::Cpu, emit::Target::Cuda}) {
    emit::EmitOptions o;
    o.target = target;
    o.name = "move_it";
    std::string text = emit::emit_kernel(proof, o);
    CHECK_THAT(text, Catch::Contains("vllm-flash-nhd -> sglang-mha on cache shape small"));
    CHECK_THAT(text, Catch::Contains("grade        EXACT_TOKEN [padding]"));
    CHECK_THAT(text, Catch::Contains("source spec  ") && Catch::Contains("sha256 "));
    CHECK_THAT(text, Catch::Contains("cache shape  small (") && Catch::Contains("num_tokens 67"));
    CHECK_THAT(text, Catch::Contains("tool         kvlayout"));
    CHECK_THAT(text, Catch::Contains("extern \"C\" int move_it(void* const* src, void* const* dst, const int32_t* const* src_tables"));
    CHECK_THAT(text, Catch::Contains("dst[0..1]  k_buffer for layer 0..1") && Catch::Contains("dst[2..3]  v_buffer for layer 0..1"));
  }
  emit::EmitOptions bad;
  bad.name = "2fast";
  CHECK_THROWS_WITH(emit::emit_kernel(proof, bad), Catch::Contains("a C identifier"));
}

TEST_CASE("a block is read in the source's order only when that order is one sequential stream of whole target lines", "[emit][plan]") {
  SECTION("HND -> NHD: the mirror image, heads outside slots") {
    auto p = plan_for("vllm-flash-hnd", "vllm-flash-nhd", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    CHECK(loop_names(p.plan.cells[0]) == std::vector<std::string>{"layer", "kv", "token_div16", "head", "token_mod16"});
    CHECK(p.plan.cells[0].source_order_from == 3);
  }
  SECTION("TRT-LLM's block holds 32 slots per head: the 16 read per vLLM block leave gaps, so the target's order stays") {
    auto p = plan_for("trtllm-pool", "vllm-flash-nhd", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    CHECK(p.plan.cells[0].source_order_from == -1);
    auto names = loop_names(p.plan.cells[0]);
    CHECK(std::vector<std::string>(names.end() - 2, names.end()) == std::vector<std::string>{"token_mod16", "head"});
  }
  SECTION("the legacy x-packed key moves 16-byte runs, less than a line: the target's order stays") {
    auto p = plan_for("vllm-paged-legacy", "vllm-flash-nhd", "llama-3.1-8b");
    CHECK(p.plan.cells[0].source_order_from == -1);
  }
  SECTION("HF's per-head token rows are far apart (a whole sequence per head): the target's order stays") {
    // Read by the source, each head's rows would be written 16 at a time into random blocks.
    auto p = plan_for("hf-dynamic", "vllm-flash-nhd", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) CHECK(c.source_order_from == -1);
  }
  SECTION("into HF's per-head rows, the source's order writes 8 sequential streams: every loop follows the source") {
    auto p = plan_for("lmcache-2ltd", "hf-dynamic", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) {
      CHECK(c.source_order_from == 1);
      CHECK(loop_names(c) == std::vector<std::string>{"layer", "token", "head"});  // the target's: layer, head, token
    }
  }
  SECTION("rows written through a per-token slot table would scatter across the target: its order stays") {
    auto p = plan_for("dynamo-universal", "sglang-mha", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) CHECK(c.source_order_from == -1);
  }
  SECTION("into SGLang's page_head pool (a token's layers together) the target's order reads 32 streams and writes one: its order stays") {
    // Read by the source, every 256-byte run would be written 8 KiB from the last (kMostReadStreams).
    auto p = plan_for("vllm-flash-hnd", "sglang-host-page-head", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    CHECK(c.source_order_from == -1);
    CHECK(loop_names(c).back() == "layer");
    // 32 read streams of 256-byte runs: the source's order is kept beside it for AMD CPUs, every loop in it.
    REQUIRE(c.cpu_order == emit::CpuOrder::by_source);
    std::vector<int> by_source = c.cpu_loops;
    std::vector<int> sorted = c.loops;
    std::sort(by_source.begin(), by_source.end());
    std::sort(sorted.begin(), sorted.end());
    CHECK(by_source == sorted);  // the same loops, in another order
    CHECK(c.modes[static_cast<std::size_t>(c.cpu_loops.back())].var != "layer");
    CHECK(c.cpu_loops_from >= 0);
    CHECK(c.loops[static_cast<std::size_t>(c.cpu_loops_from)] != c.cpu_loops[static_cast<std::size_t>(c.cpu_loops_from)]);
    CHECK(emit::describe(p.plan, p.source, p.target).find("(on AMD CPUs, by the source:") != std::string::npos);
  }
  SECTION("2 KiB runs into SGLang's page_first pool keep only the target's order, on every CPU") {
    // The control of the clause above: 32 read streams too, but the source's order measured mixed for runs
    // this long (kLongestRunBySourceOnAmd).
    auto p = plan_for("vllm-flash-nhd", "sglang-host-page-first", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) {
      CHECK(c.run_elements * 2 == 2048);
      CHECK(c.cpu_order == emit::CpuOrder::none);
    }
  }
  SECTION("1152-byte latents into SGLang's MLA page_first pool read 61 page-long streams and write one: the target's order") {
    // More than kMostReadStreams, but runs of a kilobyte or more in at most kMostLongRunReadStreams page-long
    // streams, where the source's order would write each run 70 KiB from the last.
    auto p = plan_for("sglang0523-host-mla-layer-first", "sglang0523-host-mla-page-first", "deepseek-v3", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    CHECK(c.run_elements * 2 == 1152);
    CHECK(c.source_order_from == -1);
    CHECK(loop_names(c) == std::vector<std::string>{"token_div64", "token_mod64", "layer"});
    CHECK(emit::streams_along(c, c.loops, c.source, 4096 / 2, 64) == 61);
    CHECK(emit::streams_along(c, c.loops, c.target) == 1);
  }
  SECTION("out of the MLA page_first pool, and from llama's page_first pool into its -direct twin, the source's order stays") {
    // The controls of the clause above: the target's order would read each run a token (70 KiB) from the
    // last, which is no page-long stream; into the -direct pool the source's order writes 32 page-long
    // streams, few enough.
    for (const auto& [source, target, cache] : std::vector<std::array<const char*, 3>>{
             {"sglang0523-host-mla-page-first", "vllm-mla", "deepseek-v3"},
             {"sglang0523-host-mla-page-first", "sglang0523-host-mla-layer-first", "deepseek-v3"},
             {"sglang-host-page-first", "sglang-host-page-first-direct", "llama-3.1-8b"}}) {
      INFO(source << " -> " << target);
      auto p = plan_for(source, target, cache, kCpuPlan);
      for (const auto& c : p.plan.cells) CHECK(c.source_order_from >= 0);
    }
  }
  SECTION("HF's per-head rows into vLLM's blocks read 8 streams, few on any CPU: no source's order beside the target's") {
    auto p = plan_for("hf-dynamic", "vllm-flash-nhd", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) CHECK(c.cpu_order == emit::CpuOrder::none);
  }
  SECTION("from SGLang's token pool into vLLM 0.3.3's cross-layer blocks the slots' order scatters both sides: the source's order") {
    // The control of the clause above: 32 read streams, but the writes of that order are scattered too.
    auto p = plan_for("sglang-mha", "vllm033-bhlnc", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 2);
    for (const auto& c : p.plan.cells) CHECK(c.source_order_from >= 0);
  }
  SECTION("Dynamo's cross-layer blocks into vLLM's HND blocks: the source's order writes 4 KiB pieces, whole pages: the source's order") {
    // The target's order reads 8 streams of 8 KiB (kMostStreams or fewer); the source's writes a 4 KiB
    // piece into each of 64 tensors per head: scattered by stream count, but each piece is a page.
    auto p = plan_for("dynamo-universal", "vllm-flash-hnd", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    CHECK(c.source_order_from == 0);
    CHECK(emit::streams_along(c, c.loops, c.target) > emit::kMostStreams);
    CHECK(emit::contiguous_chunk(c, c.loops, c.target) * 2 == 4096);
  }
  SECTION("vLLM 0.3.3's cross-layer blocks, head-major -> layer-major: the source's order writes 512-byte pieces: the target's order") {
    // The control of the clause above: the source's order (head, layer, token) would write each 512-byte
    // piece 4 KiB from the last, which streams_along counts as 8 KiB streams (the head loop continues
    // them) but contiguous_chunk does not. The target's order writes the whole 2 MiB block in one piece.
    auto p = plan_for("vllm033-bhlnc", "vllm033-blnhc", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    CHECK(c.source_order_from == -1);
    CHECK(loop_names(c) == std::vector<std::string>{"token_div16", "layer", "token_mod16", "head"});
    CHECK(c.run_elements * 2 == 512);
    CHECK(emit::contiguous_chunk(c, c.loops, c.target) * 2 == 2 << 20);
  }
  SECTION("HF's layer tensors into SGLang's page_head pool: 32 streams of 16 KiB a head, not 256: the target's order") {
    // A head's 64 tokens, one 16 KiB stream per layer tensor; the next page of tokens continues each of
    // them only after the other heads, which streams_along no longer counts as more streams.
    auto p = plan_for("hf-dynamic", "sglang-host-page-head", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) {
      CHECK(c.source_order_from == -1);
      CHECK(loop_names(c) == std::vector<std::string>{"token_div64", "head", "token_mod64", "layer"});
      CHECK(emit::streams_along(c, c.loops, c.source, emit::kLeastReadStreamBytes / 2, 32) == 32);
    }
  }
  SECTION("HF's layer tensors into vLLM 0.3.3's head-major blocks: one stream of 4 KiB pieces: the source's order") {
    // The control of the clause above: the target's order reads one 4 KiB piece per (layer, head), each
    // elsewhere, which is one stream at a time, not many.
    auto p = plan_for("hf-dynamic", "vllm033-bhlnc", "llama-3.1-8b");
    for (const auto& c : p.plan.cells) {
      CHECK(c.source_order_from == 0);
      CHECK(emit::streams_along(c, c.target_order_loops, c.source, emit::kLeastReadStreamBytes / 2, 32) == 33);
    }
  }
  SECTION("SGLang's page_first pool read by the target's order gives 2 KiB a token, a page apart: not a stream, so the source's order") {
    // The target's order (layer, token, head, kv) reads K's and V's 2 KiB of one layer per token, then the
    // next token 64 KiB on: two streams by count, but each shorter than a page (kLeastReadStreamBytes).
    auto p = plan_for("sglang-host-page-first", "lmcache056-packed", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    CHECK(p.plan.cells[0].source_order_from == 0);
    CHECK(loop_names(p.plan.cells[0]) == std::vector<std::string>{"kv", "token_div64", "token_mod64", "layer", "head"});
  }
}

TEST_CASE("a tile's abutting rows are prefetched on every CPU, rows far apart and a run's long prefetch only where the CPU's policies say", "[emit][plan]") {
  auto code_of = [](const char* source, const char* target) {
    spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
    auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
    cache.params["num_tokens"] = 256;
    return emit::emit_kernel(prove::prove(spec::load_layout(catalog.find_layout(source).string()),
                                          spec::load_layout(catalog.find_layout(target).string()), cache),
                             emit::EmitOptions{});
  };
  // FlashInfer's HND blocks into vLLM's legacy token-fastest V: each head's 4 KiB page is one tile,
  // prefetched a block ahead whatever the CPU (measured on the AMD: see kv_prefetch_run's note).
  const std::string tiles = code_of("flashinfer-hnd", "vllm-paged-legacy");
  CHECK_THAT(tiles, !Catch::Contains("kv_prefetch_run<4096>("));
  // A quarter of the page beside each of the page's four streamed 16 x 32 boxes (measured faster than the
  // page at once on a Zen 4); the page at once only where no box was streamed.
  CHECK_THAT(tiles, Catch::Contains("kv_prefetch<1024>(pS + oS2 * 2 + (source_next + down_done / 32 * INT64_C(512)) * 2);\n"
                                    "          kv_transpose_columns16("));
  CHECK_THAT(tiles, Catch::Contains("if (down_done == 0) {\n        kv_prefetch<4096>(pS + oS2 * 2 + source_next * 2);"));
  // The control: vLLM's per-layer kv_cache into SGLang's page_first host pool copies 2 KiB runs, whose
  // prefetch the policy may drop.
  const std::string runs = code_of("vllm-flash-nhd", "sglang-host-page-first");
  CHECK_THAT(runs, Catch::Contains("kv_prefetch_run<2048>("));
  CHECK_THAT(runs, !Catch::Contains("kv_prefetch<2048>("));
  // vLLM's NHD blocks into the legacy V: a tile's 16 token rows of one head lie 2 KiB apart, prefetched
  // row by row only where the CPU's policy says (kv_row_prefetches: not on AMD, measured there), while the
  // HND page above is prefetched unconditionally.
  const std::string rows = code_of("vllm-flash-nhd", "vllm-paged-legacy");
  CHECK_THAT(rows, Catch::Contains("if (kv_row_prefetches.load(std::memory_order_relaxed)) for (int64_t r = 0; r < INT64_C(16); ++r) kv_prefetch<256>("));
  CHECK_THAT(tiles, !Catch::Contains("kv_row_prefetches.load(std::memory_order_relaxed)) for"));
}

TEST_CASE("a tile prefetches the source rows it reads, not the span between them", "[emit][plan]") {
  // SGLang's page_first host pool keeps all layers of a token together, so legacy V's 16-token tiles read
  // 16 rows of one head's 256 bytes, 64 KiB apart: one prefetched span would be 960 KiB per head.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
  cache.params["num_tokens"] = 256;
  auto source = spec::load_layout(catalog.find_layout("sglang-host-page-first").string());
  auto target = spec::load_layout(catalog.find_layout("vllm-paged-legacy").string());
  auto p = plan_for("sglang-host-page-first", "vllm-paged-legacy", "llama-3.1-8b");
  REQUIRE(p.plan.cells.size() == 2);
  const auto& v = p.plan.cells[1];
  REQUIRE(v.tile_target_contiguous >= 0);
  const std::int64_t row_stride = v.source.stride[static_cast<std::size_t>(v.tile_target_contiguous)];
  CHECK(row_stride * 2 >= 64 * 1024);  // the rows are far apart: what makes a span wasteful
  const std::string code = emit::emit_kernel(prove::prove(source, target, cache), emit::EmitOptions{});
  std::int64_t largest = 0, prefetches = 0;
  // Every prefetch call with its span in bytes: a tile's (kv_prefetch) or a run's (kv_prefetch_run).
  const std::regex call("kv_prefetch(_run)?<([0-9]+)>\\(");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), call); it != std::sregex_iterator(); ++it) {
    largest = std::max<std::int64_t>(largest, std::stoll((*it)[2].str()));
    ++prefetches;
  }
  CHECK(prefetches > 0);
  CHECK(largest <= 2048);  // K's lines and V's 256-byte rows
  CHECK_THAT(code, Catch::Contains("if (kv_row_prefetches.load(std::memory_order_relaxed)) for (int64_t r = 0; r < INT64_C(16); ++r) kv_prefetch<256>("));
}

TEST_CASE("a copy prefetches the next block, or a strided step inside a block too large to prefetch whole", "[emit][plan]") {
  SECTION("vLLM's 32 KiB blocks: the next block, through the table") {
    auto p = plan_for("vllm-flash-nhd", "vllm-flash-hnd", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::PrefetchStep step = emit::prefetch_step(p.plan.cells[0], 2);
    CHECK(step.level == level_of(p.plan.cells[0], "token_div16"));
    CHECK(step.iterations == 1);
  }
  SECTION("TensorRT-LLM's 4 MiB blocks (all layers of 32 tokens): never the next block") {
    auto p = plan_for("trtllm-pool", "dynamo-universal", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    // Inside a block the plan reads the source in its own order, (layer, kv, head, 32 tokens).
    const int block = level_of(c, "token_div32");
    REQUIRE(block >= 0);
    REQUIRE(level_of(c, "head") > block);
    // The control: the block is what a lookup-only rule prefetches, and 4 MiB is past the limit.
    std::int64_t block_bytes = 2;
    for (std::size_t l = static_cast<std::size_t>(block) + 1; l < c.loops.size(); ++l) block_bytes *= c.modes[static_cast<std::size_t>(c.loops[l])].extent;
    block_bytes *= c.run_elements;
    CHECK(block_bytes > emit::kFarthestPrefetchBytes);
    // Inside it the source is one stream written into a few (the target's 4 KiB runs): left to the
    // hardware, never the next block.
    CHECK(emit::prefetch_step(c, 2).level == -1);
    // The kernel copies those 4 KiB runs as whole blocks four at a time (cpu.cpp, whole_blocks_at_once),
    // which read four pages at once and prefetch nothing (measured faster: 0.85-0.87x -> 1.03x of memcpy
    // at one thread); never the next 4 MiB block.
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("kv_stream_copy4<4096>(kv_block_to, kv_block_from)"));
    CHECK_THAT(code, !Catch::Contains("source_next"));
    CHECK_THAT(code, !Catch::Contains("st[0][(token_div32 + 1)]"));
  }
  SECTION("vLLM 0.3.3's 2 MiB cross-layer blocks read per token: two tokens ahead, 8 KiB") {
    // Inside the block the layer picks the source's tensor (no stride to step by) and one token reads 4 KiB.
    auto p = plan_for("vllm-flash-hnd", "vllm033-blnhc", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK(step.level == level_of(c, "token_mod16"));
    CHECK(step.iterations == 2);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("const int64_t source_next = token_mod16 + 2 < token_mod16_end ? INT64_C(256) : INT64_C(0);"));
  }
  SECTION("SGLang's 256 KiB host pages (64 tokens) of one tensor, read inside in K's and V's streams: nothing") {
    auto p = plan_for("sglang-host-page-first-direct", "lmcache056-packed", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    const int block = level_of(c, "token_div64");
    REQUIRE(block >= 0);
    // The control: the page is past the limit, and a loop inside it steps the source by a stride, which
    // a block of several tensor instances would take (the section above).
    std::int64_t block_bytes = 2 * c.run_elements;
    for (std::size_t l = static_cast<std::size_t>(block) + 1; l < c.loops.size(); ++l) block_bytes *= c.modes[static_cast<std::size_t>(c.loops[l])].extent;
    CHECK(block_bytes == 256 * 1024);
    CHECK(block_bytes > emit::kFarthestPrefetchBytes);
    CHECK(c.source.instance_coord < 0);
    CHECK(emit::prefetch_step(c, 2).level == -1);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, !Catch::Contains("source_next"));
  }
  SECTION("TensorRT-LLM's pool into vLLM's packed HND pages: K's and V's 4 KiB streams hop a page at each head, so the next head, where the CPU picks it") {
    auto p = plan_for("trtllm-pool", "vllm-packed-hnd", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    const std::vector<int> inside = loops_inside_far_block(c, "token_div32");
    // Two page-long read streams (K's and V's 16 token rows of a head), the next head 8 KiB on.
    const emit::StreamWalk reads = emit::walk_streams(c, inside, c.source, emit::kLeastReadStreamBytes / 2);
    CHECK(reads.streams == 2);
    CHECK(reads.hops);
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK(step.level == level_of(c, "head"));
    CHECK(step.iterations == 1);
    CHECK(step.on_page_hops);
    CHECK_FALSE(step.where_cpu_picks);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("if (kv_page_hop_prefetches.load(std::memory_order_relaxed)) kv_prefetch_run<256>(pS + oS5 * 2 + source_next * 2);"));
    // Every step prefetch under the choice.
    std::istringstream lines(code);
    int unguarded = 0;
    for (std::string line; std::getline(lines, line);)
      if (line.find("kv_prefetch") != std::string::npos && line.find("source_next") != std::string::npos &&
          line.find("if (kv_page_hop_prefetches.load(std::memory_order_relaxed)) ") == std::string::npos)
        ++unguarded;
    CHECK(unguarded == 0);
    // The control: into vLLM's packed NHD pages every head's K and V stream (16 of them) is continued by
    // the next 16 tokens' half of the block, so nothing is prefetched there.
    auto nhd = plan_for("trtllm-pool", "vllm-packed-nhd", "llama-3.1-8b", kCpuPlan);
    const emit::Cell& n = nhd.plan.cells[0];
    const std::vector<int> n_inside = loops_inside_far_block(n, "token_div32");
    const emit::StreamWalk n_reads = emit::walk_streams(n, n_inside, n.source, emit::kLeastReadStreamBytes / 2);
    CHECK(n_reads.streams >= 2);
    CHECK(n_reads.streams <= emit::kMostStreams);
    CHECK_FALSE(n_reads.hops);
    CHECK(emit::prefetch_step(n, 2).level == -1);
    CHECK_THAT(kernel_code(nhd), !Catch::Contains("kv_page_hop_prefetches.load"));
  }
}

TEST_CASE("a tile or box of 16 gathered source rows prefetches the next one's rows, placed by the same table one step on", "[emit][plan]") {
  // SGLang's token pool into vLLM's legacy value blocks: a tile is 16 token rows, each placed by the token
  // table; the token's higher digit moves the source only through that table.
  const std::string code = kernel_code(plan_for("sglang-mha", "vllm-paged-legacy", "llama-3.1-8b", kCpuPlan));
  CHECK_THAT(code, Catch::Contains("const char* kv_next_rows[32] = {};  // the next token_div16's tile's source rows"));
  CHECK_THAT(code, Catch::Contains("const int64_t token_div16 = kv_next_step;"));
  CHECK_THAT(code, Catch::Contains("kv_next_rows[static_cast<size_t>(g)] = pS + row * 2;"));
  CHECK_THAT(code, Catch::Contains("if (kv_next_rows[r] != nullptr) kv_prefetch<64>(kv_next_rows[r] + down0 * 2);"));
  // The next tile lies past the token's last block only where the table has no entry for it: its rows are
  // counted under the same limit as the tile's own (n tokens).
  CHECK_THAT(code, Catch::Contains("const int64_t kv_next_acrosses = kv_max(INT64_C(0), kv_min(INT64_C(16), kv_min("));
  // Its key cell, a box of 16-byte packs staged out of the same rows: the next box's rows too, placed only
  // where that box is moved whole, each step's lines of them prefetched beside the four rows'.
  CHECK_THAT(code, Catch::Contains("const char* kv_next_rows[16] = {};  // the next token_div16's box's source rows"));
  CHECK_THAT(code, Catch::Contains("const int64_t token_div16 = kv_next_step;  // the rows' placement below, one token_div16 on\n"
                                   "        if (token_div16 * INT64_C(16) + INT64_C(15) <= kv_min("));
  CHECK_THAT(code, Catch::Contains("if (kv_next_rows[kv_row0 + k] != nullptr) kv_prefetch<64>(kv_next_rows[kv_row0 + k] + kv_at);"));
  // The control: llama.cpp's transposed V read into NHD blocks gathers its target rows, not its source's,
  // and places no next tile.
  const std::string other = kernel_code(plan_for("llamacpp-vtrans", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan));
  CHECK_THAT(other, !Catch::Contains("kv_next_rows"));
}

TEST_CASE("gathered source rows read whole are staged only as the CPU's alternative, dense ones prefetch the next rows band by band, sparse ones whole, and K between them rides the blocks, the next head prefetched where the CPU picks it", "[emit][plan]") {
  auto code_of = [](const char* source) {
    auto p = plan_for(source, "llamacpp-vtrans", "llama-3.1-8b", kCpuPlan);
    return kernel_code(p);
  };
  const std::string band = "kv_prefetch<64>(kv_from_rows[static_cast<size_t>(r)] + down0 * 2);";
  const std::string stage = "kv_stream_copy<512>(burst, kv_stage_rows[r]);";
  const std::string alternative = "if (kv_staged_bursts.load(std::memory_order_relaxed))";
  const std::string ridden_prefetch = "if (kv_ridden_row_prefetches.load(std::memory_order_relaxed))";
  SECTION("vLLM's NHD rows (a token's heads and dims, 2 KiB, abutting in a block): read whole, band by band, or staged where the CPU picks it") {
    const std::string code = code_of("vllm-flash-nhd");
    CHECK_THAT(code, Catch::Contains(band));
    CHECK_THAT(code, !Catch::Contains("kv_prefetch<2048>(kv_from_rows[static_cast<size_t>(r)]);"));
    // The stage only inside the alternative, and without the gather buffer.
    const std::size_t branch = code.find(alternative);
    REQUIRE(branch != std::string::npos);
    CHECK(code.find(stage) > branch);
    CHECK(code.find(stage, code.find(stage) + 1) > code.find(alternative, branch + 1));  // one per variant, each in its branch
    CHECK_THAT(code, !Catch::Contains("kv_gather.reset("));
    CHECK_THAT(code, !Catch::Contains(ridden_prefetch));
  }
  SECTION("SGLang's page_first host pool (a token's layers between two rows): the next 32 rows whole, never staged") {
    const std::string code = code_of("sglang-host-page-first");
    CHECK_THAT(code, Catch::Contains("kv_prefetch<2048>(kv_from_rows[static_cast<size_t>(r)]);"));
    CHECK_THAT(code, !Catch::Contains(band));
    CHECK_THAT(code, !Catch::Contains(alternative));
    CHECK_THAT(code, !Catch::Contains(stage));
    CHECK_THAT(code, !Catch::Contains(ridden_prefetch));
  }
  SECTION("K and V interleaved per head (256-byte rows, 16 rows' lengths apart): the head inside the row blocks, K's runs beside them, nothing staged, the next head's K and V prefetched where the CPU picks it") {
    const std::string code = code_of("vllm-packed-nhd");
    CHECK_THAT(code, Catch::Contains("head walked inside the row blocks, cell 0's runs copied from the same rows"));
    CHECK_THAT(code, Catch::Contains("kv_transpose_rows_block<2>(kv_to, across0 * 2, kv_from_rows.data() + across0, (head * INT64_C(256) + down0) * 2, "));
    CHECK_THAT(code, Catch::Contains("const int64_t kv_token = st[1][slot];"));
    CHECK_THAT(code, !Catch::Contains("(kv_from_rows[static_cast<size_t>(r)]"));  // no row prefetched whole or band by band
    CHECK_THAT(code, !Catch::Contains("static void cell0("));                   // K has no nest of its own
    // Beside each head, the next head's K run (256 bytes, 128 elements before V's columns in the row) and
    // V's columns of this block's rows, or the next block's first head after the last; in both variants.
    const std::string next_step = "const int64_t kv_next_step = kv_last ? 0 : (head + 1) * INT64_C(256);";
    const std::string next_first = "const int64_t kv_next_first = kv_last ? across0 + 32 : across0;";
    const std::string key_run = "kv_prefetch<256>(kv_row + (kv_next_step + INT64_C(-128)) * 2);";
    const std::string value_columns = "kv_prefetch<256>(kv_row + kv_next_step * 2);";
    for (const std::string& line : {ridden_prefetch, next_step, next_first, key_run, value_columns}) {
      INFO(line);
      const std::size_t first = code.find(line);
      REQUIRE(first != std::string::npos);
      CHECK(code.find(line, first + 1) != std::string::npos);
    }
    // Before the head's own K runs and blocks.
    CHECK(code.find(ridden_prefetch) < code.find("const int64_t kv_token = st[1][slot];"));
    CHECK_THAT(code, !Catch::Contains(band));
    CHECK_THAT(code, !Catch::Contains(alternative));
    CHECK_THAT(code, !Catch::Contains(stage));
  }
  SECTION("HF's rows (one head's dims, heads outer): staged with the gather buffer where the CPU picks it, else read whole band by band") {
    const std::string code = code_of("hf-dynamic");
    const std::size_t branch = code.find(alternative);
    REQUIRE(branch != std::string::npos);
    CHECK(code.find("kv_gather.reset(") > branch);
    CHECK(code.find(stage) > branch);
    // Each variant's straight blocks, after its staged branch: the rows read whole, the next 32 band by band.
    const std::size_t straight = code.find(band, branch);
    REQUIRE(straight != std::string::npos);
    CHECK(code.find(stage, branch) < straight);
    CHECK_THAT(code, !Catch::Contains(ridden_prefetch));
  }
}

TEST_CASE("runs read from per-layer source tensors a layer at a time prefetch the layer 8 KiB ahead, not the next token", "[emit][plan]") {
  SECTION("vLLM's per-layer kv_cache into SGLang's page_first host pool: 2 KiB of each layer in turn, four layers ahead") {
    auto p = plan_for("vllm-flash-nhd", "sglang-host-page-first", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    // A token's layers are together in the target; the CPU plan splits them into groups of four (phase 5f),
    // looped in turn here: the instance steps as one loop over the layer.
    const int layer = level_of(c, "layer_mod4");
    REQUIRE(layer == static_cast<int>(c.loops.size()) - 1);
    REQUIRE(level_of(c, "layer_div4") == layer - 1);
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK(step.next_instance);
    CHECK(step.level == layer);
    CHECK(step.iterations == 4);
    const std::string code = kernel_code(p);
    // Never past the last layer: there the current one is prefetched again.
    CHECK_THAT(code, Catch::Contains("const char* const pS_next = static_cast<const char*>(S[layer_div4 * INT64_C(4) + layer_mod4 + INT64_C(4) <= "
                                     "INT64_C(31) ? INT64_C(0) + layer_div4 * INT64_C(4) + layer_mod4 + INT64_C(4) : INT64_C(0) + layer_div4 * "
                                     "INT64_C(4) + layer_mod4]);"));
    CHECK_THAT(code, Catch::Contains("kv_prefetch_run<2048>(pS_next + "));
  }
  SECTION("the control: a strided loop inside the layer's (LMCache 0.5.6's 2td into TensorRT-LLM's pool, by token) keeps its own step") {
    auto p = plan_for("lmcache056-2td", "trtllm-pool", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    REQUIRE(level_of(c, "token_mod32") > level_of(c, "layer"));
    REQUIRE(c.source.instance_coord >= 0);  // the layer picks the source's tensor here too
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK_FALSE(step.next_instance);
    CHECK(step.level == level_of(c, "token_mod32"));
    CHECK(step.iterations == 4);
    CHECK_THAT(kernel_code(p), !Catch::Contains("pS_next"));
  }
}

TEST_CASE("a straight key box that no step of its nest encloses prefetches the layer ahead's same kilobyte", "[emit][plan]") {
  SECTION("the legacy key block into SGLang's page_first host pool: a 32 KiB box of each layer in turn, the runs' step inside it") {
    auto p = plan_for("vllm-paged-legacy", "sglang-host-page-first", "llama-3.1-8b", kCpuPlan);
    REQUIRE(!p.plan.cells.empty());
    const emit::Cell& c = p.plan.cells[0];  // the key packs (cell0)
    const int layer = level_of(c, "layer"), box = level_of(c, "token_mod16");
    REQUIRE(box == layer + 1);
    REQUIRE(emit::prefetch_step(c, 2).level >= box);  // the nest's own step lies inside the box
    const emit::PrefetchStep step = emit::box_instance_step(c, 2, box);
    CHECK(step.next_instance);
    CHECK(step.level == layer);
    CHECK(step.iterations == 1);
    const std::string code = kernel_code(p);
    // Never past the last layer: there the current one is prefetched again.
    CHECK_THAT(code, Catch::Contains("const char* const pS_box_next = static_cast<const char*>(S[layer + INT64_C(1) < layer_end ? INT64_C(0) + layer + "
                                     "INT64_C(1) : INT64_C(0) + layer]);"));
    CHECK_THAT(code, Catch::Contains("if (kv_straight_box_prefetches.load(std::memory_order_relaxed)) kv_prefetch_run<1024>(pS_box_next + oS2 * 2 + kv_step * "
                                     "INT64_C(1024));"));
    // The control: a box outside the loop picking the instance has no instance ahead to prefetch.
    CHECK(emit::box_instance_step(c, 2, layer).level == -1);
  }
  SECTION("the control: into vLLM's NHD flash cache the nest's step (the next block) encloses the box, which prefetches that") {
    auto p = plan_for("vllm-paged-legacy", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("if (kv_straight_box_prefetches.load(std::memory_order_relaxed)) kv_prefetch_run<1024>(pS + (oS1 + source_next) * 2 + "
                                     "kv_step * INT64_C(1024));"));
    CHECK_THAT(code, !Catch::Contains("pS_box_next"));
  }
}

TEST_CASE("tiles read from per-layer source tensors inside a block too far to prefetch take the layer 8 KiB ahead too", "[emit][plan]") {
  SECTION("vLLM's legacy value cache into Dynamo's universal block: a 4 KiB box of each layer in turn, two layers ahead") {
    auto p = plan_for("vllm-paged-legacy", "dynamo-universal", "llama-3.1-8b", kCpuPlan);
    const emit::Cell* tile = first_tile(p.plan);
    REQUIRE(tile != nullptr);
    const emit::Cell& c = *tile;
    // The block looked up holds every layer and head of 16 tokens (1 MiB): its next one is far past the
    // hardware's reach, and the layer picks the source's tensor inside it.
    const int layer = level_of(c, "layer");
    REQUIRE(layer == static_cast<int>(c.loops.size()) - 1);
    REQUIRE(emit::bytes_per_iteration(c, 0, 2) > emit::kFarthestPrefetchBytes);
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK(step.next_instance);
    CHECK(step.level == layer);
    CHECK(step.iterations == 2);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("kv_prefetch_run<1024>(pS_next + oS2 * 2 + (source_next + across_at * INT64_C(16)) * 2);"));
  }
  SECTION("the control: a tile whose block is near (the legacy cache into vLLM's flash layout, 32 KiB blocks) prefetches the next block") {
    auto p = plan_for("vllm-paged-legacy", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    const emit::Cell* tile = first_tile(p.plan);
    REQUIRE(tile != nullptr);
    const emit::Cell& c = *tile;
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK_FALSE(step.next_instance);
    REQUIRE(step.level >= 0);
    CHECK(emit::bytes_per_iteration(c, step.level, 2) <= emit::kFarthestPrefetchBytes);
    CHECK_THAT(kernel_code(p), !Catch::Contains("pS_next"));
  }
}

TEST_CASE("a short lookup loop's prefetch carries into the enclosing loop's next iteration for tiles, not for runs of lines", "[emit][plan]") {
  SECTION("the legacy value cache into TensorRT-LLM's 32-token blocks: the second 16-token block's prefetch is the next head's first") {
    auto p = plan_for("vllm-paged-legacy", "trtllm-pool", "llama-3.1-8b", kCpuPlan);
    const emit::Cell* tile = first_tile(p.plan);
    REQUIRE(tile != nullptr);
    const emit::PrefetchStep step = emit::prefetch_step(*tile, 2);
    REQUIRE(step.level == level_of(*tile, "token_div16_mod2"));
    REQUIRE(level_of(*tile, "head") == step.level - 1);
    const emit::Inputs in{"S", "T", "st", "dt", "n"};
    const std::string carried = " : (head + 1 < head_end ? (static_cast<int64_t>(st[0][(INT64_C(0) + (token_div32 * INT64_C(2)))]) - aS0) * INT64_C(16384) + INT64_C(2048) : INT64_C(0))";
    CHECK_THAT(emit::next_displacement(*tile, step, in, "token_div16_mod2_end", {"head_end", true, true, ""}), Catch::EndsWith(carried));
    // The control: with no enclosing loop named, past the last iteration nothing is prefetched.
    CHECK_THAT(emit::next_displacement(*tile, step, in, "token_div16_mod2_end"), Catch::EndsWith(" : INT64_C(0)"));
    CHECK_THAT(kernel_code(p), Catch::Contains(carried + ";"));
  }
  SECTION("the control: runs of 256 bytes (FlashInfer's HND pages into SGLang's page_head pool) leave the hardware to follow into the next head") {
    auto p = plan_for("flashinfer-hnd", "sglang-host-page-head", "llama-3.1-8b", kCpuPlan);
    const std::string code = kernel_code(p);
    REQUIRE_THAT(code, Catch::Contains("kv_prefetch_run<256>("));
    CHECK_THAT(code, !Catch::Contains("(head + 1 < head_end ?"));
  }
}

TEST_CASE("a short lookup loop's prefetch carries through the table into an enclosing loop the same lookup reads, for runs of lines too", "[emit][plan]") {
  SECTION("vLLM 0.3.3's 16-token blocks into TensorRT-LLM's 32-token ones: the second block's prefetch is the next 32 tokens' first") {
    auto p = plan_for("vllm033-lhbnc", "trtllm-pool", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    REQUIRE(c.run_elements * 2 >= 64);  // runs of lines: no carry by stride
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    REQUIRE(step.level == level_of(c, "token_div16_mod2"));
    REQUIRE(level_of(c, "token_div32") == step.level - 1);
    const emit::Inputs in{"S", "T", "st", "dt", "n"};
    const std::string carried =
        " : (kv_lookup_carried_prefetches.load(std::memory_order_relaxed) && token_div32 + 1 < token_div32_end && (token_div32 + 1) * INT64_C(32) <= "
        "kv_min(INT64_C(131071), n - 1) ? (static_cast<int64_t>(st[0][(INT64_C(0) + ((token_div32 + 1) * INT64_C(2)))]) - aS0) * INT64_C(4096) : "
        "INT64_C(0))";
    const emit::Carry carry{"token_div32_end", false, true, "lookup_carried_prefetches"};
    CHECK_THAT(emit::next_displacement(c, step, in, "token_div16_mod2_end", carry), Catch::EndsWith(carried));
    // Unguarded where no choice is named; nothing past the last iteration where no enclosing loop is.
    CHECK_THAT(emit::next_displacement(c, step, in, "token_div16_mod2_end", {"token_div32_end", false, true, ""}),
               Catch::EndsWith(" : (token_div32 + 1 < token_div32_end && (token_div32 + 1) * INT64_C(32) <= kv_min(INT64_C(131071), n - 1) ? "
                               "(static_cast<int64_t>(st[0][(INT64_C(0) + ((token_div32 + 1) * INT64_C(2)))]) - aS0) * INT64_C(4096) : INT64_C(0))"));
    CHECK_THAT(emit::next_displacement(c, step, in, "token_div16_mod2_end"), Catch::EndsWith(" : INT64_C(0)"));
    CHECK_THAT(kernel_code(p), Catch::Contains(carried + ";"));
  }
  SECTION("the control: 32 KiB blocks (FlashInfer's NHD pages into SGLang's layer_first pool), longer than kNearestPrefetchBytes, carry nothing") {
    auto p = plan_for("flashinfer-nhd", "sglang-host-layer-first", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    REQUIRE(step.level > 0);
    CHECK(emit::bytes_per_iteration(c, step.level, 2) > emit::kNearestPrefetchBytes);
    const emit::Inputs in{"S", "T", "st", "dt", "n"};
    const std::string outer_end = c.modes[static_cast<std::size_t>(c.loops[static_cast<std::size_t>(step.level - 1)])].var + "_end";
    // The enclosing loop would carry it were the caller to ask (it is read by the same lookup alone) ...
    REQUIRE_THAT(emit::next_displacement(c, step, in, "bound", {outer_end, false, true, "lookup_carried_prefetches"}),
                 Catch::Contains("kv_lookup_carried_prefetches.load"));
    // ... and the printer does not.
    CHECK_THAT(kernel_code(p), !Catch::Contains("kv_lookup_carried_prefetches.load(std::memory_order_relaxed) &&"));
  }
  SECTION("the control: an enclosing loop the lookup does not read (the head, over HND pages into SGLang's page_head pool) carries nothing") {
    auto p = plan_for("flashinfer-hnd", "sglang-host-page-head", "llama-3.1-8b", kCpuPlan);
    const std::string code = kernel_code(p);
    REQUIRE_THAT(code, Catch::Contains("kv_prefetch_run<256>("));
    CHECK_THAT(code, !Catch::Contains("kv_lookup_carried_prefetches.load(std::memory_order_relaxed) &&"));
  }
}

TEST_CASE("a block too far to prefetch, read inside in one page-long stream and written in a few, is left to the hardware", "[emit][plan]") {
  SECTION("vLLM 0.3.3's BHLNC block (a head's 32 layers in one 256 KiB stream) into FlashInfer's HND pages (K's and V's 4 KiB a layer)") {
    auto p = plan_for("vllm033-bhlnc", "flashinfer-hnd", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const emit::Cell& c = p.plan.cells[0];
    const std::vector<int> inside = loops_inside_far_block(c, "token_div16");
    CHECK(emit::streams_along(c, inside, c.source, emit::kLeastReadStreamBytes / 2) == 1);
    CHECK(emit::streams_along(c, inside, c.target, emit::kLeastReadStreamBytes / 2) <= emit::kMostStreams);
    CHECK(emit::prefetch_step(c, 2).level == -1);
    // The nest for a target off its lines walks the layer outside the block, whose 64 KiB it prefetches.
    const std::string code = kernel_code(p);
    const std::size_t nest = code.find("static void cell0("), other = code.find("static void cell0_off_lines(");
    REQUIRE(nest != std::string::npos);
    REQUIRE(other > nest);
    CHECK(code.substr(nest, other - nest).find("source_next") == std::string::npos);
  }
  SECTION("the control: one read stream written into many (SGLang's page_head pool, a token's 32 layers, into per-layer tensors) keeps its step") {
    auto p = plan_for("sglang-host-page-head", "vllm-flash-hnd", "llama-3.1-8b", kCpuPlan);
    const emit::Cell& c = p.plan.cells[0];
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    REQUIRE(step.level >= 0);
    const std::vector<int> inside(c.loops.begin() + level_of(c, "token_div64") + 1, c.loops.end());
    CHECK(emit::streams_along(c, inside, c.source, emit::kLeastReadStreamBytes / 2) == 1);
    CHECK(emit::streams_along(c, inside, c.target, emit::kLeastReadStreamBytes / 2) > emit::kMostStreams);
    CHECK(step.level == level_of(c, "token_mod16"));
    CHECK_THAT(kernel_code(p), Catch::Contains("kv_prefetch_run<256>(pS + oS5 * 2 + source_next * 2);"));
  }
}

TEST_CASE("a source read without a table is prefetched 8 KiB ahead, unless the hardware already follows it", "[emit][plan]") {
  SECTION("SGLang's token pool over its slots: one stream of 2 KiB runs, four slots ahead") {
    auto p = plan_for("sglang-mha", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    const emit::Cell& c = p.plan.cells[0];
    REQUIRE(c.source.atoms.empty());  // the control for the rule: nothing in the source is looked up
    REQUIRE(emit::streams_along(c, c.loops, c.source, emit::kLeastReadStreamBytes / 2) == 1);
    const emit::PrefetchStep step = emit::prefetch_step(c, 2);
    CHECK(step.level == level_of(c, "slot"));
    CHECK(step.iterations == 4);
    CHECK_THAT(kernel_code(p), Catch::Contains("const int64_t source_next = slot + 4 < E1 ? INT64_C(4096) : INT64_C(0);"));
  }
  SECTION("a few page-long read streams (HF's heads) are left to the hardware") {
    auto p = plan_for("hf-dynamic", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    const emit::Cell& c = p.plan.cells[0];
    const std::int64_t reads = emit::streams_along(c, c.loops, c.source, emit::kLeastReadStreamBytes / 2);
    CHECK(reads >= 2);
    CHECK(reads <= emit::kMostStreams);
    CHECK(emit::prefetch_step(c, 2).level == -1);
    CHECK_THAT(kernel_code(p), !Catch::Contains("source_next"));
  }
  SECTION("HF's heads read in 4 KiB tiles (vLLM's legacy V) or 16-byte packs (its K): the next head, on its own pages, where the call's CPU picks it") {
    auto p = plan_for("hf-dynamic", "vllm-paged-legacy", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 2);
    for (const emit::Cell& c : p.plan.cells) {
      REQUIRE(c.source.atoms.empty());
      // A tile, or runs shorter than a line: what kv_table_free_prefetches picks for.
      REQUIRE((c.tile_target_contiguous >= 0 || c.run_elements * 2 < 64));
      // Each head's next page lies 512 KiB on, in a stream the hardware does not carry across pages.
      const emit::PrefetchStep step = emit::prefetch_step(c, 2);
      CHECK(step.level == level_of(c, "head"));
      CHECK(step.iterations == 1);  // kNearestPickedPrefetchBytes: a head's 4 KiB
      CHECK(step.where_cpu_picks);
    }
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("const int64_t source_next = head + 1 < head_end ? "));
    CHECK_THAT(code, Catch::Contains("if (kv_table_free_prefetches.load(std::memory_order_relaxed)) kv_prefetch<4096>(pS + oS2 * 2 + source_next * 2);"));
    // Every step prefetch of it under the choice: none unguarded.
    std::istringstream lines(code);
    int step_prefetches = 0, unguarded = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("kv_prefetch") == std::string::npos || line.find("source_next") == std::string::npos) continue;
      ++step_prefetches;
      if (line.find("if (kv_table_free_prefetches.load(std::memory_order_relaxed)) ") == std::string::npos) ++unguarded;
    }
    CHECK(step_prefetches > 0);
    CHECK(unguarded == 0);
    // The controls: a table's next block (FlashInfer's HND pages, through its block table) is prefetched
    // on every CPU, and so are the table-free runs of a line or more (SGLang's token pool).
    auto tabled = plan_for("flashinfer-hnd", "vllm-paged-legacy", "llama-3.1-8b", kCpuPlan);
    for (const emit::Cell& c : tabled.plan.cells) CHECK_FALSE(emit::prefetch_step(c, 2).where_cpu_picks);
    const std::string tabled_code = kernel_code(tabled);
    CHECK_THAT(tabled_code, Catch::Contains("kv_prefetch<4096>(pS + oS2 * 2 + source_next * 2);"));
    CHECK_THAT(tabled_code, !Catch::Contains("kv_table_free_prefetches.load"));
    auto runs = plan_for("sglang-mha", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    const emit::PrefetchStep run_step = emit::prefetch_step(runs.plan.cells[0], 2);
    CHECK(run_step.level >= 0);
    CHECK_FALSE(run_step.where_cpu_picks);
    CHECK_THAT(kernel_code(runs), !Catch::Contains("kv_table_free_prefetches.load"));
    // And LMCache's heads, 512 bytes apart in its token rows (not on pages of their own): picked by the
    // CPU too, but kNearestPrefetchBytes ahead, two heads of 16 rows.
    auto near = plan_for("lmcache-2ltd", "vllm-paged-legacy", "llama-3.1-8b", kCpuPlan);
    for (const emit::Cell& c : near.plan.cells) {
      const emit::PrefetchStep step = emit::prefetch_step(c, 2);
      CHECK(step.where_cpu_picks);
      CHECK(step.level == level_of(c, "head"));
      CHECK(step.iterations == 2);
    }
    CHECK_THAT(kernel_code(near), Catch::Contains("const int64_t source_next = head + 2 < head_end ? "));
  }
  SECTION("whole blocks of 8 KiB or more are left to kv_stream_copy's page streams") {
    auto p = plan_for("lmcache-mla", "vllm-mla", "deepseek-v3", kCpuPlan);
    const emit::Cell& c = p.plan.cells[0];
    // The control: told of no whole block, the same cell would be prefetched.
    CHECK(emit::prefetch_step(c, 2, 0).level >= 0);
    CHECK(emit::prefetch_step(c, 2, 16 * 576 * 2).level == -1);
    const std::string code = kernel_code(p);
    CHECK_THAT(code, Catch::Contains("kv_stream_copy<18432>("));
    CHECK_THAT(code, !Catch::Contains("source_next"));
  }
}

TEST_CASE("runs read through a per-token slot table walk that table's slots, so the source is read in its own order", "[emit][plan]") {
  // SGLang's token pool: each token's heads x dims lie at its slot. Walked by token, every run is a read
  // at a random slot; walked over the inverted table's slots, the reads are sequential and the writes
  // (whole streamed lines) land where the token's place says. Only the CPU plan inverts.
  auto cpu = plan_for("sglang-mha", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
  auto plain = plan_for("sglang-mha", "vllm-flash-nhd", "llama-3.1-8b");
  REQUIRE(cpu.plan.cells.size() == plain.plan.cells.size());
  REQUIRE(cpu.plan.inverses.size() == 1);
  CHECK(cpu.plan.inverses[0].on_source);
  for (std::size_t i = 0; i < cpu.plan.cells.size(); ++i) {
    const auto& c = cpu.plan.cells[i];
    CHECK(c.run_elements == plain.plan.cells[i].run_elements);  // the run is kept
    CHECK(std::any_of(c.coords.begin(), c.coords.end(), [](const emit::CellCoordinate& x) { return x.inverse >= 0 && x.name == "slot"; }));
    CHECK(std::none_of(plain.plan.cells[i].coords.begin(), plain.plan.cells[i].coords.end(), [](const emit::CellCoordinate& x) { return x.inverse >= 0; }));
  }
  // A source placed by a block table (vLLM's pages) is not inverted: its table is read with token / 16.
  auto paged = plan_for("vllm-flash-nhd", "sglang-mha", "llama-3.1-8b", kCpuPlan);
  CHECK(paged.plan.inverses.empty());
}

TEST_CASE("runs shorter than a target line keep the target's order, not the slot table's", "[emit][plan]") {
  // The legacy key cache's 16-byte x-packs: walked by slot, each would be a quarter line written at a
  // random place. The key cell keeps the token (by the target's order); legacy V is a tile either way.
  auto cpu = plan_for("sglang-mha", "vllm-paged-legacy", "llama-3.1-8b", kCpuPlan);
  REQUIRE(cpu.plan.cells.size() == 2);
  const emit::Cell& k = cpu.plan.cells[0];
  CHECK(k.run_elements == 8);
  CHECK(k.tile_target_contiguous < 0);
  CHECK(std::none_of(k.coords.begin(), k.coords.end(), [](const emit::CellCoordinate& x) { return x.inverse >= 0; }));
  // The control: the same source into whole-line runs is walked by slot (the case above).
  auto lines = plan_for("sglang-mha", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
  CHECK(std::any_of(lines.plan.cells[0].coords.begin(), lines.plan.cells[0].coords.end(), [](const emit::CellCoordinate& x) { return x.inverse >= 0; }));
}

TEST_CASE("a per-layer source into SGLang's page_head pool, read a layer at a time, carries its layers in groups of four beside it", "[emit][plan]") {
  // Where the plan's order ends with the layer's two digits, the second order walks the group outermost
  // and the layer within it innermost.
  auto groups_around_the_innermost_layer = [](const emit::Cell& c, emit::CpuOrder order) {
    REQUIRE(c.cpu_order == order);
    CHECK(loop_names(c).back() == "layer_mod4");
    CHECK(c.modes[static_cast<std::size_t>(c.cpu_loops.front())].var == "layer_div4");
    CHECK(c.modes[static_cast<std::size_t>(c.cpu_loops.back())].var == "layer_mod4");
  };
  // vLLM's per-layer NHD cache: the source's order (layer outermost) writes each 256-byte run alone, 8 KiB
  // from the last; the layer's next value continues the run in the target (a token's layers together).
  SECTION("the CPU plan splits the layer into groups: the same walk, and a second order with the group's layer innermost") {
    auto p = plan_for("vllm-flash-nhd", "sglang-host-page-head", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    REQUIRE(c.cpu_order == emit::CpuOrder::instance_groups);
    CHECK(loop_names(c) == std::vector<std::string>{"layer_div4", "layer_mod4", "kv", "token_div64", "token_div16_mod4", "token_mod16", "head"});
    std::vector<std::string> second;
    for (int m : c.cpu_loops) second.push_back(c.modes[static_cast<std::size_t>(m)].var);
    CHECK(second == std::vector<std::string>{"layer_div4", "kv", "token_div64", "token_div16_mod4", "token_mod16", "head", "layer_mod4"});
    CHECK(c.cpu_loops_from == 1);
    // Grouped, each target piece is four runs (1 KiB), read from four streams.
    CHECK(emit::contiguous_chunk(c, c.cpu_loops, c.target) == 4 * c.run_elements);
    CHECK(emit::contiguous_chunk(c, c.loops, c.target) == c.run_elements);
    CHECK(emit::describe(p.plan, p.source, p.target).find("(on AMD CPUs, instances in groups:") != std::string::npos);
  }
  SECTION("into SGLang's page_first pool the target's order reads one stream per layer: the second order's group is outermost") {
    auto p = plan_for("vllm-flash-nhd", "sglang-host-page-first", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    groups_around_the_innermost_layer(c, emit::CpuOrder::instance_groups);
    CHECK(c.cpu_loops_from == 0);
    // Grouped, the source is read in four streams, not one per layer; the target written in 8 KiB pieces.
    CHECK(emit::streams_along(c, c.loops, c.source) > emit::kMostStreams);
    CHECK(emit::streams_along(c, c.cpu_loops, c.source) == 4);
    CHECK(emit::contiguous_chunk(c, c.cpu_loops, c.target) * 2 == 8192);
  }
  SECTION("out of SGLang's page_head pool into a per-layer cache (the mirror image) there are no groups") {
    auto p = plan_for("sglang-host-page-head", "vllm-flash-nhd", "llama-3.1-8b", kCpuPlan);
    for (const auto& c : p.plan.cells) {
      CHECK(c.cpu_order == emit::CpuOrder::none);
      CHECK(loop_names(c).back() == "layer");
    }
  }
  SECTION("without the option (the CUDA plan, the checkers') the layer stays one loop and no second order") {
    auto p = plan_for("vllm-flash-nhd", "sglang-host-page-head", "llama-3.1-8b");
    REQUIRE(p.plan.cells.size() == 1);
    CHECK(p.plan.cells[0].cpu_order == emit::CpuOrder::none);
    CHECK(loop_names(p.plan.cells[0]).front() == "layer");
  }
  SECTION("where the target's order reads 32 streams of 256-byte runs, the groups take the place of the source's order beside it, on every CPU") {
    // From vLLM's HND cache into the page_head pool, phase 5b keeps the target's order (the layer innermost)
    // and would print the source's beside it (CpuOrder::by_source, as without the option); the groups
    // measured faster than either on AMD, and than the target's order on Intel (read_streams_in_groups).
    auto without = plan_for("vllm-flash-hnd", "sglang-host-page-head", "llama-3.1-8b");
    REQUIRE(without.plan.cells.size() == 1);
    CHECK(without.plan.cells[0].cpu_order == emit::CpuOrder::by_source);
    auto p = plan_for("vllm-flash-hnd", "sglang-host-page-head", "llama-3.1-8b", kCpuPlan);
    REQUIRE(p.plan.cells.size() == 1);
    const auto& c = p.plan.cells[0];
    groups_around_the_innermost_layer(c, emit::CpuOrder::read_streams_in_groups);
    CHECK(emit::describe(p.plan, p.source, p.target).find("(on every CPU, instances in groups:") != std::string::npos);
  }
  SECTION("where the layer picks the target's tensor too, or the source holds a token's layers together, there are no groups") {
    // Into SGLang's layer_first pool the layer picks both tensors; Dynamo's cross-layer blocks keep the
    // source's order beside the target's (phase 5b).
    for (const auto& [s, t] : {std::pair<std::string, std::string>{"vllm-flash-nhd", "sglang-host-layer-first"}, {"dynamo-universal", "sglang-host-page-head"}}) {
      INFO(s << " -> " << t);
      auto p = plan_for(s, t, "llama-3.1-8b", kCpuPlan);
      for (const auto& c : p.plan.cells) {
        CHECK(c.cpu_order != emit::CpuOrder::instance_groups);
        CHECK(c.cpu_order != emit::CpuOrder::read_streams_in_groups);
      }
    }
  }
  SECTION("a layer count the group does not divide gets no groups") {
    spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
    auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
    cache.params["num_layers"] = 30;
    const auto S = layout::bind(spec::load_layout(catalog.find_layout("vllm-flash-nhd").string()), cache);
    const auto T = layout::bind(spec::load_layout(catalog.find_layout("sglang-host-page-head").string()), cache);
    const emit::Plan plan = emit::make_plan(S, T, kCpuPlan);
    for (const auto& c : plan.cells) {
      CHECK(c.cpu_order == emit::CpuOrder::none);
      CHECK(loop_names(c).front() == "layer");
    }
  }
}

TEST_CASE("K and V halves moved into rows that hold a head's K next to its V carry a second order with the halves innermost", "[emit][plan]") {
  // SGLang's page_first pool holds every K, then every V; vLLM's packed NHD cache holds a head's K then its V
  // in one 512-byte row. Walked in the source's order the kv loop is outermost; phase 5h prints beside it
  // the order with kv innermost, just outside the run (CpuOrder::interleaved_rows).
  auto p = plan_for("sglang-host-page-first", "vllm-packed-nhd", "llama-3.1-8b", kCpuPlan);
  REQUIRE(p.plan.cells.size() == 1);
  const auto& c = p.plan.cells[0];
  REQUIRE(loop_names(c).front() == "kv");
  CHECK(c.cpu_order == emit::CpuOrder::interleaved_rows);
  CHECK(c.cpu_loops_from == 0);
  std::vector<std::string> second;
  for (int m : c.cpu_loops) second.push_back(c.modes[static_cast<std::size_t>(m)].var);
  const std::vector<std::string> first = loop_names(c);
  std::vector<std::string> expected(first.begin() + 1, first.end());
  expected.push_back("kv");
  CHECK(second == expected);
  CHECK(emit::describe(p.plan, p.source, p.target).find("(on AMD CPUs with AVX-512, interleaved rows together:") != std::string::npos);
  SECTION("the control: into FlashInfer's NHD pages, whose K and V lie 32 KiB apart, there is none") {
    auto apart = plan_for("sglang-host-page-first", "flashinfer-nhd", "llama-3.1-8b", kCpuPlan);
    for (const auto& cell : apart.plan.cells) CHECK(cell.cpu_order != emit::CpuOrder::interleaved_rows);
  }
}

TEST_CASE("K and V a page apart in the source, side by side in the target's rows, carry the interleaved order from inside the outer loops too", "[emit][plan]") {
  // FlashInfer's NHD page holds its 16 tokens' K (32 KiB), then their V; LMCache's t2d object holds each
  // token's K row (2 KiB) next to its V row. The source's order walks kv outside the token's lowest digit
  // (each target row written in two passes, a half each time, 32 KiB of the source apart); phase 5h
  // prints beside it the order with kv innermost, each row written whole (CpuOrder::interleaved_rows),
  // though kv is not the outermost loop.
  auto p = plan_for("flashinfer-nhd", "lmcache056-t2d", "llama-3.1-8b", kCpuPlan);
  REQUIRE(p.plan.cells.size() == 1);
  const auto& c = p.plan.cells[0];
  const std::vector<std::string> first = loop_names(c);
  REQUIRE(first == std::vector<std::string>{"layer", "token_div16", "kv", "token_mod16"});
  REQUIRE(c.cpu_order == emit::CpuOrder::interleaved_rows);
  CHECK(c.cpu_loops_from == 2);
  std::vector<std::string> second;
  for (int m : c.cpu_loops) second.push_back(c.modes[static_cast<std::size_t>(m)].var);
  CHECK(second == std::vector<std::string>{"layer", "token_div16", "token_mod16", "kv"});
  SECTION("the control: K and V 2 KiB apart in the source (LMCache's t2d rows into vLLM's packed HND pages) carry none") {
    // There the source's order already reads a row's K and V one after the other.
    auto near = plan_for("lmcache056-t2d", "vllm-packed-hnd", "llama-3.1-8b", kCpuPlan);
    REQUIRE(near.plan.cells.size() == 1);
    const auto& n = near.plan.cells[0];
    const std::vector<std::string> loops = loop_names(n);
    const auto kv = std::find(loops.begin(), loops.end(), "kv");
    REQUIRE(kv != loops.end());
    CHECK(kv != loops.begin());
    CHECK(kv + 1 != loops.end());  // an inner loop, short of the innermost: only the source's distance differs
    CHECK(n.cpu_order == emit::CpuOrder::none);
  }
}

TEST_CASE("only a paged source's whole blocks over two pages, stepped by a loop that reads its block table alone, are walked in the table's order", "[emit][plan]") {
  // vLLM's MLA cache into LMCache's: 18 KiB blocks, token_div16 reads block_table[token_div16] alone.
  auto mla = plan_for("vllm-mla", "lmcache-mla", "deepseek-v3", kCpuPlan);
  const std::string code = kernel_code(mla);
  CHECK_THAT(code, Catch::Contains("std::stable_sort(kv_order.begin(), kv_order.end(), [&](int32_t a, int32_t b) { return st[0][a] < st[0][b]; });"));
  CHECK_THAT(code, Catch::Contains("token_div16 = (kv_by_blocks ? static_cast<int64_t>(kv_order[static_cast<size_t>(flat % E1)]) : flat % E1);"));
  CHECK_THAT(code, Catch::Contains("kv_stream_copy<18432>(pT + oT1 * 2, pS + oS1 * 2, !kv_by_blocks);"));
  // The next physical block is prefetched in that order.
  CHECK_THAT(code, Catch::Contains("const int64_t source_next = kv_by_blocks ? INT64_C(9216) : ("));
  SECTION("into a paged target too: its table is then written in the source's order") {
    CHECK_THAT(kernel_code(plan_for("vllm-flash-nhd", "flashinfer-nhd", "llama-3.1-8b", kCpuPlan)), Catch::Contains("kv_blocks_in_order.load"));
  }
  SECTION("controls: a source with no block table, and blocks of two pages (copied four at a time), have none") {
    for (const auto& [s, t] : {std::pair<std::string, std::string>{"hf-dynamic", "flashinfer-hnd"}, {"vllm-packed-hnd", "vllm033-bhlnc"}}) {
      INFO(s << " -> " << t);
      CHECK_THAT(kernel_code(plan_for(s, t, "llama-3.1-8b", kCpuPlan)), !Catch::Contains("kv_blocks_in_order.load"));
    }
  }
}

// What the sweep's roofline holds a pair against (bench/move_kind.hpp), read from the plans of shipped
// pairs: the legacy caches' value tiles turn one way and their key packs the same way, each half of the
// elements held against its own pattern; llama.cpp's transposed V beside a key copied in whole rows holds
// half its elements at memcpy; a pair of runs has no transpose. The controls: a tiled cell and a cell of
// long runs are not packs, and the pack turn flips with the move's direction. llama.cpp's transposed V from
// or into pages of K and V interleaved by head turns over interleaved rows; a key in its own tensor or a
// block away leaves whole lines (the controls); the rule itself, on an edited plan: the same instances of
// the same tensor at most a row apart, not other instances (K and V allocated apart) nor farther. The legacy
// cache against a slot pool: its value tiles and key packs both held against the transposes with token rows
// one by one; into a token-major block (the control) the key packs are not.
#include <catch2/catch.hpp>
#include <tuple>

#include "bench/move_kind.hpp"
#include "bench/pattern_set.hpp"
#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

struct Planned {
  layout::BoundLayout source, target;
  emit::Plan plan;
  std::string kind, turn;
  std::map<std::string, double> shares;
};

// The plan the sweep makes for source -> target on llama-3.1-8b (emit::kCpuPlanOptions), read as it reads it.
Planned planned(const std::string& source, const std::string& target) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
  Planned p{layout::bind(spec::load_layout(catalog.find_layout(source).string()), cache, {{"num_tokens", 2048}}),
            layout::bind(spec::load_layout(catalog.find_layout(target).string()), cache, {{"num_tokens", 2048}}), {}, "", "", {}};
  p.plan = emit::make_plan(p.source, p.target, emit::kCpuPlanOptions);
  const std::int64_t element_bytes = p.source.element_bytes();
  p.kind = bench::move_kind(p.plan, element_bytes);
  if (p.kind.rfind("transpose", 0) == 0) p.turn = bench::transpose_turn(p.plan, element_bytes);
  p.shares = bench::ceiling_shares(p.plan, element_bytes, bench::ceiling_key(p.kind, p.turn));
  return p;
}

double total(const std::map<std::string, double>& shares) {
  double sum = 0;
  for (const auto& [key, share] : shares) sum += share;
  return sum;
}

}  // namespace

TEST_CASE("move kind: the legacy cache's value tiles and key packs turn the same way, each half held against its own pattern", "[bench][roofline]") {
  for (bool out_of : {true, false}) {
    const std::string turn = out_of ? "out of token-fastest" : "into token-fastest";
    INFO(turn);
    const Planned p = out_of ? planned("vllm-paged-legacy", "vllm-flash-nhd") : planned("vllm-flash-nhd", "vllm-paged-legacy");
    CHECK(p.kind == "transpose");
    CHECK(p.turn == turn);
    REQUIRE(p.shares.size() == 2);
    CHECK(p.shares.at("transpose (" + turn + ")") == Approx(0.5));
    CHECK(p.shares.at("transpose, packs (" + turn + ")") == Approx(0.5));
    std::size_t packs = 0, tiles = 0;
    for (const emit::Cell& c : p.plan.cells) {
      const std::string pack = bench::pack_turn(p.plan, c, 2);
      packs += pack == turn;
      tiles += c.tile_target_contiguous >= 0;
      if (c.tile_target_contiguous >= 0) CHECK(pack.empty());  // the control: a tiled cell is no pack
    }
    CHECK(packs == 1);
    CHECK(tiles == 1);
  }
}

TEST_CASE("move kind: llama.cpp's transposed V beside its key's rows holds half the elements against the key's own runs, and runs have no turn",
          "[bench][roofline]") {
  // Whole 2 KiB rows (an NHD source) and 256-byte head rows (HF's HND tensors, FlashInfer's HND pages)
  // alike: each key cell is held against its own runs replayed, the value tile against the row transpose.
  for (const auto& [source, target, run_elements] : {std::tuple{"vllm-flash-nhd", "llamacpp-vtrans", 1024}, std::tuple{"llamacpp-vtrans", "hf-dynamic", 128},
                                                     std::tuple{"flashinfer-hnd", "llamacpp-vtrans", 128}}) {
    INFO(source << " -> " << target);
    const Planned p = planned(source, target);
    CHECK(p.kind.rfind("transpose", 0) == 0);
    REQUIRE(p.shares.size() == 2);
    REQUIRE(p.shares.count(bench::kOwnRunsKey));
    CHECK(p.shares.at(bench::kOwnRunsKey) == Approx(0.5));
    CHECK(p.shares.at(bench::ceiling_key(p.kind, p.turn)) == Approx(0.5));
    CHECK(bench::shortest_own_run(p.plan, 2) == run_elements);
    std::size_t own = 0;
    for (const emit::Cell& c : p.plan.cells) own += bench::is_own_runs_cell(p.plan, c, 2);
    CHECK(own == 1);
  }
  const Planned v = planned("vllm-flash-nhd", "llamacpp-vtrans");
  for (const emit::Cell& c : v.plan.cells) CHECK(bench::pack_turn(v.plan, c, 2).empty());  // the control: long runs and tiles are no packs
  const Planned r = planned("vllm-flash-nhd", "vllm-flash-hnd");
  CHECK(r.kind.rfind("runs", 0) == 0);
  CHECK(r.turn.empty());
  CHECK(total(r.shares) == Approx(1));
  CHECK(r.shares.count("transpose, packs (out of token-fastest)") == 0);
}

TEST_CASE("move kind: llama.cpp's transposed V from or into pages of K and V interleaved by head turns over interleaved rows, every element held against it",
          "[bench][roofline]") {
  for (const auto& [source, target, turn] : {std::tuple{"vllm033-blnhc", "llamacpp-vtrans", "K and V interleaved, source rows gathered"},
                                             std::tuple{"lmcache056-packed", "llamacpp-vtrans", "K and V interleaved, source rows gathered"},
                                             std::tuple{"llamacpp-vtrans", "vllm-packed-nhd", "K and V interleaved, target rows gathered"}}) {
    INFO(source << " -> " << target);
    const Planned p = planned(source, target);
    CHECK(p.kind == "transpose, gathered rows");
    CHECK(p.turn == turn);
    // The key's 256-byte pieces are held against the same pattern, which carries them too.
    REQUIRE(p.shares.size() == 1);
    CHECK(p.shares.count(bench::ceiling_key(p.kind, p.turn)) == 1);
    CHECK(bench::shortest_own_run(p.plan, 2) == 0);
  }
  // The controls: a key in its own tensor (vLLM's flash layout) and one in the same tensor but a whole
  // block of heads away (FlashInfer's HND pages) leave the V rows whole lines.
  for (const char* source : {"vllm-flash-nhd", "flashinfer-hnd"}) {
    INFO(source);
    CHECK(planned(source, "llamacpp-vtrans").turn == "whole lines, source rows gathered");
  }
}

TEST_CASE("move kind: rows are interleaved only with another cell's in the same instances of the same tensor, at most one row apart, "
          "and a runs cell between them is the tile pattern's", "[bench][roofline]") {
  // vllm-flash-nhd -> llamacpp-vtrans: the key cell reads its own tensor. Made to read the value cell's
  // tensor and instances at the row after it, the turn is interleaved and the key cell is carried by the
  // interleaved row transpose (no share of its own); in other instances of that tensor (K and V allocated
  // apart, per layer and kv) or more than a row away, neither: it is held against its own runs again.
  Planned p = planned("vllm-flash-nhd", "llamacpp-vtrans");
  REQUIRE(p.plan.cells.size() == 2);
  const bool first_is_tile = p.plan.cells[0].tile_target_contiguous >= 0;
  emit::Cell& tile = p.plan.cells[first_is_tile ? 0 : 1];
  emit::Cell& runs = p.plan.cells[first_is_tile ? 1 : 0];
  REQUIRE(tile.tile_source_rows_gathered);
  REQUIRE(p.turn == "whole lines, source rows gathered");
  REQUIRE(bench::is_own_runs_cell(p.plan, runs, 2));
  CHECK_FALSE(bench::is_own_runs_cell(p.plan, tile, 2));
  runs.source.tensor = tile.source.tensor;
  runs.source.view = tile.source.view;
  runs.source.instance_first = tile.source.instance_first;
  runs.source.constant = tile.source.constant + tile.tile_source_extent;
  CHECK(bench::transpose_turn(p.plan, 2) == "K and V interleaved, source rows gathered");
  CHECK_FALSE(bench::is_own_runs_cell(p.plan, runs, 2));
  CHECK(bench::shortest_own_run(p.plan, 2) == 0);
  CHECK(bench::ceiling_shares(p.plan, 2, "pair").size() == 1);
  runs.source.instance_first = tile.source.instance_first + 32;
  CHECK(bench::transpose_turn(p.plan, 2) == "whole lines, source rows gathered");
  CHECK(bench::is_own_runs_cell(p.plan, runs, 2));
  runs.source.instance_first = tile.source.instance_first;
  runs.source.constant = tile.source.constant + tile.tile_source_extent + 1;
  CHECK(bench::transpose_turn(p.plan, 2) == "whole lines, source rows gathered");
  CHECK(bench::is_own_runs_cell(p.plan, runs, 2));
  CHECK(bench::ceiling_shares(p.plan, 2, "pair").at(bench::kOwnRunsKey) == Approx(0.5));
}

TEST_CASE("move kind: the legacy cache against a slot pool holds its key packs against the pack transpose with token rows one by one, each way",
          "[bench][roofline]") {
  for (bool out_of : {true, false}) {
    const std::string turn = out_of ? "out of token-fastest" : "into token-fastest";
    for (const char* pool : {"sglang-mha", "llamacpp"}) {
      INFO(turn << ", " << pool);
      const Planned p = out_of ? planned("vllm-paged-legacy", pool) : planned(pool, "vllm-paged-legacy");
      CHECK(p.kind == "transpose, gathered rows");
      CHECK(p.turn == turn);
      REQUIRE(p.shares.size() == 2);
      CHECK(p.shares.at("transpose, gathered rows (" + turn + ")") == Approx(0.5));
      CHECK(p.shares.at("transpose, packs, gathered rows (" + turn + ")") == Approx(0.5));
      std::size_t one_by_one = 0;
      for (const emit::Cell& c : p.plan.cells) one_by_one += bench::pack_rows_one_by_one(p.plan, c, 2);
      CHECK(one_by_one == 1);
    }
    // The control: into or out of a token-major block the key's rows are the block's own.
    const Planned block = out_of ? planned("vllm-paged-legacy", "vllm-flash-nhd") : planned("vllm-flash-nhd", "vllm-paged-legacy");
    for (const emit::Cell& c : block.plan.cells) CHECK(!bench::pack_rows_one_by_one(block.plan, c, 2));
  }
}

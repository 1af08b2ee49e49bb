// Rank groups: a family expanded over its ranks on a cache shape (layout::expand_group), each member's bound
// head range checked against the engines' own rule computed here independently, and the members' domains
// checked to partition (or replicate) the heads as the engine sources say.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "layout/address.hpp"
#include "layout/rank_group.hpp"
#include "spec/catalog.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;
using I = std::int64_t;

namespace {

std::shared_ptr<const spec::Layout> shipped_layout(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_layout(catalog.find_layout(name).string());
}

spec::CacheShape shipped_cache(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache(name).string());
}

// The KV heads a tensor-parallel rank holds, by the engines' rule (vLLM/SGLang QKVParallelLinear, TRT-LLM
// duplicate_kv_weight + load_weight_shard), written the way the engine code computes it: with at least as
// many heads as ranks each rank takes a contiguous slice of num_kv_heads / tp_size heads; otherwise each rank
// has one head, the weight shard tp_rank // (tp_size / num_kv_heads).
struct HeadRange {
  I first = 0;
  I count = 0;
};

HeadRange engine_heads(I num_kv_heads, I tp_size, I tp_rank) {
  if (tp_size >= num_kv_heads) {
    I num_kv_head_replicas = tp_size / num_kv_heads;
    return {tp_rank / num_kv_head_replicas, 1};
  }
  I per_rank = num_kv_heads / tp_size;
  return {tp_rank * per_rank, per_rank};
}

// For a kv-heads group: which members hold each head, checked at both K and V, first and last token and
// first and last dim. Returns the problems found (empty = each member binds, every held position has an
// in-bounds address whose head index is the rank-local head, and holders[h] lists the members holding h,
// the same at every probed position).
std::vector<std::string> head_holders(const layout::Group& g, const spec::CacheShape& cache,
                                      std::vector<std::vector<std::size_t>>& holders) {
  std::vector<std::string> problems;
  const I heads = *cache.get("num_kv_heads");
  const I last_token = *cache.get("num_tokens") - 1;
  const I last_dim = *cache.get("head_size") - 1;
  holders.assign(static_cast<std::size_t>(heads), {});
  for (std::size_t m = 0; m < g.members.size(); ++m) {
    auto b = layout::bind(g.members[m].layout, cache);
    if (!b.fits()) {
      problems.push_back(g.label(m) + " does not fit: " + b.misfits.at(0).what);
      continue;
    }
    auto tables = layout::identity_tables(b);
    for (I h = 0; h < heads; ++h) {
      int held = 0;
      int probes = 0;
      for (I kv : {0, 1})
        for (I token : {I{0}, last_token})
          for (I dim : {I{0}, last_dim}) {
            ++probes;
            std::vector<I> coord = {0, kv, token, h, dim};
            auto loc = layout::locate(b, coord, tables);
            if (loc.placement == layout::Placement::OutOfBounds)
              problems.push_back(g.label(m) + ": " + layout::format_coordinate(b, coord) + " out of bounds: " +
                                 loc.violation);
            if (loc.placement != layout::Placement::Held) continue;
            ++held;
            // The axis the declaration indexes by the rank-local head holds h - first_head.
            const auto& view = b.tensors.at(static_cast<std::size_t>(loc.address.tensor))
                                   .views.at(static_cast<std::size_t>(loc.address.view));
            int local_axes = 0;
            for (std::size_t a = 0; a < view.index_texts.size(); ++a)
              if (view.index_texts[a] == "head - first_head") {
                ++local_axes;
                if (loc.address.index.at(a) != h - b.values.at("first_head"))
                  problems.push_back(g.label(m) + ": " + layout::format_coordinate(b, coord) +
                                     " at local head " + std::to_string(loc.address.index.at(a)));
              }
            if (local_axes != 1)
              problems.push_back(g.label(m) + ": " + std::to_string(local_axes) +
                                 " axes indexed by the rank-local head");
          }
      if (held == probes) holders[static_cast<std::size_t>(h)].push_back(m);
      else if (held != 0)
        problems.push_back(g.label(m) + " holds head " + std::to_string(h) + " at some positions only");
    }
  }
  return problems;
}

// The engines' ownership rule as a whole: every head held, each by exactly max(1, tp_size / num_kv_heads)
// ranks, and those ranks exactly the ones engine_heads names.
std::vector<std::string> check_partition(const layout::Group& g, const spec::CacheShape& cache, I tp_size) {
  std::vector<std::vector<std::size_t>> holders;
  auto problems = head_holders(g, cache, holders);
  const I heads = *cache.get("num_kv_heads");
  for (I h = 0; h < heads; ++h) {
    std::vector<std::size_t> expected;
    for (I r = 0; r < tp_size; ++r) {
      HeadRange e = engine_heads(heads, tp_size, r);
      if (h >= e.first && h < e.first + e.count) expected.push_back(static_cast<std::size_t>(r));
    }
    const auto& got = holders[static_cast<std::size_t>(h)];
    if (got.empty()) problems.push_back("head " + std::to_string(h) + " held by no rank");
    if (static_cast<I>(got.size()) != std::max<I>(1, tp_size / heads))
      problems.push_back("head " + std::to_string(h) + " held by " + std::to_string(got.size()) + " ranks");
    if (got != expected) problems.push_back("head " + std::to_string(h) + " held by other ranks than the engine's");
  }
  return problems;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST_CASE("vllm-flash-nhd-tp expands to one member per rank with vLLM's head range", "[layout][ranks]") {
  auto family = shipped_layout("vllm-flash-nhd-tp");
  struct Case {
    std::string cache;
    I tp_size;
  };
  for (const Case& c : std::vector<Case>{{"llama-3.1-70b", 1}, {"llama-3.1-70b", 2}, {"llama-3.1-70b", 4},
                                         {"llama-3.1-70b", 8}, {"llama-3.1-70b", 16}, {"qwen2.5-1.5b", 4}}) {
    INFO(c.cache << " tp_size " << c.tp_size);
    auto cache = shipped_cache(c.cache);
    const I heads = *cache.get("num_kv_heads");
    auto g = layout::expand_group(family, cache, {{"tp_size", c.tp_size}});
    CHECK(g.is_family());
    REQUIRE(g.members.size() == static_cast<std::size_t>(c.tp_size));
    CHECK(g.sizes == std::map<std::string, I>{{"tp_size", c.tp_size}});
    CHECK(g.title() == "vllm-flash-nhd-tp (tp_size=" + std::to_string(c.tp_size) + ")");
    for (std::size_t m = 0; m < g.members.size(); ++m) {
      const I r = static_cast<I>(m);
      INFO("member " << m);
      CHECK(g.label(m) == "rank " + std::to_string(r));
      CHECK(g.members[m].rank == std::vector<std::pair<std::string, I>>{{"tp_rank", r}});
      CHECK(g.members[m].layout->name == "vllm-flash-nhd-tp[tp_rank=" + std::to_string(r) + "]");
      CHECK_FALSE(spec::is_family(*g.members[m].layout));
      auto b = layout::bind(g.members[m].layout, cache);
      REQUIRE(b.fits());
      HeadRange e = engine_heads(heads, c.tp_size, r);
      CHECK(b.values.at("first_head") == e.first);
      CHECK(b.values.at("heads_per_rank") == e.count);
      CHECK(b.values.at("tp_rank") == r);
    }
    CHECK(join(check_partition(g, cache, c.tp_size)).empty());
  }
}

TEST_CASE("a plain layout is a group of one member, the whole cache", "[layout][ranks]") {
  auto g = layout::expand_group(shipped_layout("vllm-flash-nhd"), shipped_cache("small"), {});
  CHECK_FALSE(g.is_family());
  REQUIRE(g.members.size() == 1);
  CHECK(g.label(0) == "whole");
  CHECK(g.title() == "vllm-flash-nhd");
  CHECK(g.sizes.empty());
  CHECK(g.members[0].rank.empty());
}

TEST_CASE("every shipped per-head tensor-parallel family partitions or replicates the heads as its engine does",
          "[layout][ranks]") {
  struct Case {
    std::string cache;
    I tp_size;
  };
  const std::vector<Case> cases = {{"llama-3.1-70b", 1}, {"llama-3.1-70b", 2}, {"llama-3.1-70b", 4},
                                   {"llama-3.1-70b", 8}, {"llama-3.1-70b", 16}, {"qwen2.5-1.5b", 1},
                                   {"qwen2.5-1.5b", 2},  {"qwen2.5-1.5b", 4},  {"qwen2.5-1.5b", 8},
                                   {"small", 2},         {"small", 4},         {"small", 8}};
  for (const std::string name : {"vllm-flash-nhd-tp", "sglang-mha-tp", "trtllm-pool-tp"}) {
    auto family = shipped_layout(name);
    REQUIRE(spec::is_family(*family));
    for (const Case& c : cases) {
      INFO(name << " on " << c.cache << " tp_size " << c.tp_size);
      auto cache = shipped_cache(c.cache);
      auto g = layout::expand_group(family, cache, {{"tp_size", c.tp_size}});
      REQUIRE(g.members.size() == static_cast<std::size_t>(c.tp_size));
      CHECK(join(check_partition(g, cache, c.tp_size)).empty());
    }
  }
}

TEST_CASE("the partition check fails a family whose replicated ranks run past the heads (control)",
          "[layout][ranks]") {
  // vllm-flash-nhd-tp with the replication dropped: rank r starts at r * heads_per_rank, so with more ranks
  // than heads ranks 8.. hold nothing and no head is replicated.
  test::TempDir dir;
  spec::Json j = spec::read_json_file(shipped_layout("vllm-flash-nhd-tp")->file);
  j["name"] = "broken-tp";
  j["params"]["first_head"] = "tp_rank * heads_per_rank";
  j["requires"] = spec::Json::array({"tp_rank >= 0 && tp_rank < tp_size"});
  auto family = spec::load_layout(dir.write("broken-tp.json", j.dump(2)));
  auto cache = shipped_cache("llama-3.1-70b");
  CHECK(join(check_partition(layout::expand_group(family, cache, {{"tp_size", 4}}), cache, 4)).empty());
  auto problems = check_partition(layout::expand_group(family, cache, {{"tp_size", 16}}), cache, 16);
  CHECK_FALSE(problems.empty());
  CHECK_THAT(join(problems), Catch::Contains("held by 1 ranks"));
}

TEST_CASE("the partition check fails a family whose ranks overlap (control)", "[layout][ranks]") {
  // Every rank claims every head: heads are held tp_size times where the engine holds each once.
  test::TempDir dir;
  spec::Json j = spec::read_json_file(shipped_layout("vllm-flash-nhd-tp")->file);
  j["name"] = "overlap-tp";
  j["params"]["heads_per_rank"] = "num_kv_heads";
  j["params"]["first_head"] = "0";
  auto family = spec::load_layout(dir.write("overlap-tp.json", j.dump(2)));
  auto cache = shipped_cache("llama-3.1-70b");
  auto problems = check_partition(layout::expand_group(family, cache, {{"tp_size", 2}}), cache, 2);
  CHECK_THAT(join(problems), Catch::Contains("held by 2 ranks"));
}

TEST_CASE("a tensor-parallel size that neither divides nor is divided by the heads does not fit", "[layout][ranks]") {
  auto cache = shipped_cache("llama-3.1-70b");
  for (const std::string name : {"vllm-flash-nhd-tp", "sglang-mha-tp", "trtllm-pool-tp"}) {
    INFO(name);
    auto g = layout::expand_group(shipped_layout(name), cache, {{"tp_size", 3}});
    REQUIRE(g.members.size() == 3);
    for (const auto& member : g.members) {
      auto b = layout::bind(member.layout, cache);
      REQUIRE_FALSE(b.fits());
      CHECK_THAT(b.misfits.at(0).what, Catch::Contains("num_kv_heads % tp_size == 0"));
    }
  }
}

TEST_CASE("vllm-mla-tp replicates the whole latent on every rank at the same address", "[layout][ranks]") {
  auto family = shipped_layout("vllm-mla-tp");
  REQUIRE(spec::is_family(*family));
  for (const std::string cache_name : {"small", "deepseek-v3"}) {
    auto cache = shipped_cache(cache_name);
    const I last_token = *cache.get("num_tokens") - 1;
    const I last_latent = *cache.get("kv_lora_rank") + *cache.get("qk_rope_head_dim") - 1;
    for (I tp : {1, 2, 4, 8, 16}) {
      INFO(cache_name << " tp_size " << tp);
      auto g = layout::expand_group(family, cache, {{"tp_size", tp}});
      REQUIRE(g.members.size() == static_cast<std::size_t>(tp));
      std::vector<std::vector<I>> first_offsets;
      for (std::size_t m = 0; m < g.members.size(); ++m) {
        auto b = layout::bind(g.members[m].layout, cache);
        REQUIRE(b.fits());
        auto tables = layout::identity_tables(b);
        std::vector<I> offsets;
        for (I layer : {I{0}, *cache.get("num_layers") - 1})
          for (I token : {I{0}, last_token})
            for (I latent : {I{0}, I{511}, I{512}, last_latent}) {
              std::vector<I> coord = {layer, token, latent};
              auto loc = layout::locate(b, coord, tables);
              REQUIRE(loc.placement == layout::Placement::Held);
              offsets.push_back(loc.address.instance);
              offsets.push_back(loc.address.offset);
            }
        if (m == 0) first_offsets.push_back(offsets);
        else CHECK(offsets == first_offsets.front());
      }
    }
  }
}

TEST_CASE("expand_group refuses a rank bound for the whole group, a size below 1 and one over the limit",
          "[layout][ranks]") {
  auto family = shipped_layout("vllm-flash-nhd-tp");
  auto cache = shipped_cache("llama-3.1-70b");
  SECTION("a rank parameter bound for the whole group") {
    try {
      layout::expand_group(family, cache, {{"tp_size", 2}, {"tp_rank", 1}});
      FAIL("expanded a group with its rank bound");
    } catch (const spec::SpecError& e) {
      INFO(e.what());
      CHECK_THAT(e.file, Catch::EndsWith("vllm-flash-nhd-tp.json"));
      CHECK(e.path == "/ranks/tp_rank");
      CHECK_THAT(e.found, Catch::Contains("tp_rank"));
      CHECK_THAT(e.expected, Catch::Contains("tp_size"));
    }
  }
  SECTION("a size of 0, as an override") {
    // The family divides by tp_size (heads_per_rank), so binding refuses it before the size check.
    CHECK_THROWS_AS(layout::expand_group(family, cache, {}, {{"tp_size", 0}}), spec::SpecError);
    CHECK_THROWS_WITH(layout::expand_group(family, cache, {}, {{"tp_size", 0}}), Catch::Contains("tp_size"));
  }
  SECTION("a size of 0, as a side parameter") {
    CHECK_THROWS_AS(layout::expand_group(family, cache, {{"tp_size", 0}}), spec::SpecError);
  }
  SECTION("a size of 0 where nothing divides by it") {
    try {
      layout::expand_group(shipped_layout("vllm-mla-tp"), shipped_cache("deepseek-v3"), {}, {{"tp_size", 0}});
      FAIL("expanded a group of no ranks");
    } catch (const spec::SpecError& e) {
      INFO(e.what());
      CHECK(e.path == "/ranks/tp_rank");
      CHECK(e.found == "tp_size = 0");
    }
  }
  SECTION("a negative size where nothing divides by it") {
    // vllm-mla-tp reads tp_size only in its rank requirement, so the size check itself must refuse it.
    try {
      layout::expand_group(shipped_layout("vllm-mla-tp"), shipped_cache("deepseek-v3"), {{"tp_size", -2}});
      FAIL("expanded a group of -2 ranks");
    } catch (const spec::SpecError& e) {
      INFO(e.what());
      CHECK(e.path == "/ranks/tp_rank");
      CHECK(e.found == "tp_size = -2");
      CHECK_THAT(e.expected, Catch::Contains("1 <= tp_size"));
    }
  }
  SECTION("a size over layout::max_group_members") {
    const I too_many = 2 * layout::max_group_members;  // a multiple of 8 heads, so the family fits
    try {
      layout::expand_group(family, cache, {{"tp_size", too_many}});
      FAIL("expanded a group of " << too_many << " members");
    } catch (const spec::SpecError& e) {
      INFO(e.what());
      CHECK_THAT(e.file, Catch::EndsWith("vllm-flash-nhd-tp.json"));
      CHECK(e.path == "/ranks/tp_rank");
      CHECK(e.found == "tp_size = " + std::to_string(too_many));
      CHECK(e.expected == "1 <= tp_size <= " + std::to_string(layout::max_group_members));
    }
  }
  SECTION("the limit itself is allowed") {
    auto g = layout::expand_group(shipped_layout("vllm-mla-tp"), shipped_cache("deepseek-v3"),
                                  {{"tp_size", layout::max_group_members}});
    CHECK(g.members.size() == static_cast<std::size_t>(layout::max_group_members));
  }
}

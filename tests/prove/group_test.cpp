// Group proofs (prove/group.hpp): heterogeneous TP, replicated heads, whole <-> group, and planted
// ownership defects, with the assignment checked against vLLM's rule computed independently here, the
// cells' decisions checked against the solver's, and every group counterexample located again.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "layout/address.hpp"
#include "layout/rank_group.hpp"
#include "prove/group.hpp"
#include "prove/group_report.hpp"
#include "spec/catalog.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout::test {
namespace {

using prove::Grade;
using prove::Reason;

spec::Catalog catalog() { return spec::Catalog(KVLAYOUT_SPECS_DIR); }

spec::CacheShape cache_named(const std::string& name) { return spec::load_cache(catalog().find_cache(name).string()); }

std::shared_ptr<const spec::Layout> layout_named(const std::string& name) {
  return spec::load_layout(catalog().find_layout(name).string());
}

layout::Group group(std::shared_ptr<const spec::Layout> decl, const spec::CacheShape& cache, std::int64_t tp_size = 0) {
  std::map<std::string, std::int64_t> params;
  if (tp_size > 0) params["tp_size"] = tp_size;
  return layout::expand_group(std::move(decl), cache, params);
}

prove::GroupProof prove_tp(std::int64_t from, std::int64_t to, const std::string& cache_name, bool normalise = true) {
  auto cache = cache_named(cache_name);
  auto family = layout_named("vllm-flash-nhd-tp");
  prove::ProveOptions options;
  options.normalise = normalise;
  auto source = from == 0 ? group(layout_named("vllm-flash-nhd"), cache) : group(family, cache, from);
  auto target = to == 0 ? group(layout_named("vllm-flash-nhd"), cache) : group(family, cache, to);
  return prove::prove_group(source, target, cache, options);
}

// vLLM's rule (QKVParallelLinear, ModelConfig.get_num_kv_heads), written out again: the heads [first, end)
// rank r of tp_size holds for num_kv_heads heads; tp_size 0 is the whole layout.
std::pair<std::int64_t, std::int64_t> heads_of(std::int64_t r, std::int64_t tp_size, std::int64_t kv) {
  if (tp_size == 0) return {0, kv};
  if (tp_size <= kv) return {r * (kv / tp_size), (r + 1) * (kv / tp_size)};
  std::int64_t replicas = tp_size / kv;
  return {r / replicas, r / replicas + 1};
}

// The assignment a correct group proof must show: for each target rank and head, the lowest source rank
// holding that head; consecutive heads from one source rank form one entry.
struct Expected {
  std::int64_t target, source, first, end;
  bool operator==(const Expected& o) const {
    return target == o.target && source == o.source && first == o.first && end == o.end;
  }
};

std::vector<Expected> expected_assignment(std::int64_t from, std::int64_t to, std::int64_t kv) {
  std::vector<Expected> out;
  const std::int64_t targets = to == 0 ? 1 : to, sources = from == 0 ? 1 : from;
  for (std::int64_t q = 0; q < targets; ++q) {
    auto [first, end] = heads_of(q, to, kv);
    for (std::int64_t h = first; h < end; ++h) {
      std::int64_t feeder = -1;
      for (std::int64_t r = 0; r < sources && feeder < 0; ++r) {
        auto [f, e] = heads_of(r, from, kv);
        if (h >= f && h < e) feeder = r;
      }
      if (!out.empty() && out.back().target == q && out.back().source == feeder && out.back().end == h) ++out.back().end;
      else out.push_back({q, feeder, h, h + 1});
    }
  }
  return out;
}

std::vector<Expected> shown_assignment(const prove::GroupProof& g) {
  std::vector<Expected> out;
  for (const auto& a : g.assignment) {
    REQUIRE(a.heads);
    out.push_back({static_cast<std::int64_t>(a.target_member), static_cast<std::int64_t>(a.source_member),
                   a.heads->first, a.heads->end});
  }
  return out;
}

const prove::ObligationResult* refuted(const prove::GroupProof& g) {
  for (const auto& r : g.proof.obligations)
    if (r.status == prove::Status::Refuted && r.reason == g.proof.reason) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("hetero-TP moves of vllm-flash-nhd-tp are EXACT_BYTE at production size, with vLLM's assignment",
          "[prove][group]") {
  struct Case {
    std::int64_t from, to;
  };
  // 0 is the whole layout (vllm-flash-nhd); 16 replicates llama-3.1-70b's 8 KV heads on two ranks each.
  for (Case c : {Case{1, 2}, Case{2, 1}, Case{2, 4}, Case{4, 2}, Case{8, 2}, Case{2, 8}, Case{8, 16}, Case{16, 8},
                 Case{16, 2}, Case{0, 1}, Case{0, 2}, Case{0, 4}, Case{0, 8}, Case{0, 16}, Case{2, 0}, Case{16, 0}}) {
    INFO(c.from << " -> " << c.to);
    prove::GroupProof g = prove_tp(c.from, c.to, "llama-3.1-70b");
    CHECK(g.proof.grade == Grade::ExactByte);
    CHECK(shown_assignment(g) == expected_assignment(c.from, c.to, 8));
    for (const auto& a : g.assignment) {
      REQUIRE(a.layers);
      CHECK(a.layers->first == 0);
      CHECK(a.layers->end == 80);
    }
  }
}

TEST_CASE("replicated heads both ways on the small cache (4 KV heads, TP 8): exact, replicas fed by the lowest rank",
          "[prove][group]") {
  for (auto [from, to] : {std::pair<std::int64_t, std::int64_t>{8, 1}, {1, 8}, {8, 2}, {2, 8}, {8, 8}, {0, 8}, {8, 0}}) {
    INFO(from << " -> " << to);
    prove::GroupProof g = prove_tp(from, to, "small");
    // 67 tokens leave a partial last block: padding, as in the whole layout's own move (EXACT_TOKEN).
    CHECK(g.proof.grade == Grade::ExactToken);
    CHECK(g.proof.reason == Reason::Padding);
    CHECK(shown_assignment(g) == expected_assignment(from, to, 4));
  }
}

TEST_CASE("the group report lists the assignment and --json's contract fields", "[prove][group]") {
  prove::GroupProof g = prove_tp(2, 1, "llama-3.1-70b");
  std::string text = prove::format_group_text(g);
  CHECK(text.find("target rank 0, heads 0..3, layers 0..79 <- source rank 0, heads 0..3, layers 0..79") != std::string::npos);
  CHECK(text.find("target rank 0, heads 4..7, layers 0..79 <- source rank 1, heads 4..7, layers 0..79") != std::string::npos);
  spec::Json j = prove::group_to_json(g);
  REQUIRE(j["assignment"].size() == 2);
  CHECK(j["assignment"][1]["target_rank"] == 0);
  CHECK(j["assignment"][1]["source_rank"] == 1);
  CHECK(j["assignment"][1]["heads"] == spec::Json::array({4, 8}));
  CHECK(j["assignment"][1]["layers"] == spec::Json::array({0, 80}));
  CHECK(j["grade"] == "EXACT_BYTE");
  for (const auto& o : j["obligations"]) CHECK(o.contains("instance"));
}

namespace {

// The family's JSON with one edit, written under a temp dir as a layout of its own.
std::shared_ptr<const spec::Layout> edited_family(const TempDir& dir, const std::string& name,
                                                  const std::function<void(spec::Json&)>& edit) {
  std::ifstream in(catalog().find_layout("vllm-flash-nhd-tp"));
  spec::Json j = spec::Json::parse(in);
  j["name"] = name;
  j.erase("cite");
  j["control"] = true;
  edit(j);
  return spec::load_layout(dir.write(name + ".json", j.dump(2)));
}

// Locates the counterexample's first position on every instance of `g` again: held by `holder` and by
// no instance of `others` (a group covers/carries counterexample).
void recheck_subset_witness(const prove::ObligationResult& r, const layout::Group& holder_group, std::size_t holder,
                            const layout::Group& others, const spec::CacheShape& cache) {
  REQUIRE(r.counterexample);
  REQUIRE(!r.counterexample->positions.empty());
  const auto& coord = r.counterexample->positions.front().coord;
  auto held = [&](const spec::Layout& decl) {
    layout::BoundLayout b = layout::bind(std::make_shared<spec::Layout>(decl), cache);
    REQUIRE(b.fits());
    return layout::locate(b, coord, layout::identity_tables(b)).placement != layout::Placement::NotHeld;
  };
  CHECK(held(*holder_group.members[holder].layout));
  for (const auto& m : others.members) CHECK_FALSE(held(*m.layout));
}

}  // namespace

TEST_CASE("a family that leaves a head to no rank: the group is refused, naming the head and the rank",
          "[prove][group]") {
  TempDir dir;
  auto cache = cache_named("llama-3.1-70b");
  // Rank 1 of TP 2 claims one head fewer: head 7 of llama-3.1-70b is on no rank.
  auto gap = edited_family(dir, "tp-gap", [](spec::Json& j) {
    j["holds"] = "head >= first_head && head < first_head + heads_per_rank - min(tp_rank, 1)";
  });
  auto whole = group(layout_named("vllm-flash-nhd"), cache);
  auto correct = group(layout_named("vllm-flash-nhd-tp"), cache, 2);
  auto gapped = group(gap, cache, 2);
  for (bool normalise : {true, false}) {
    INFO("normalise " << normalise);
    prove::ProveOptions options;
    options.normalise = normalise;

    // Group -> whole: the whole layout holds head 7, no rank does.
    prove::GroupProof g = prove::prove_group(gapped, whole, cache, options);
    CHECK(g.proof.grade == Grade::Refused);
    CHECK(g.proof.reason == Reason::MissingPositions);
    const auto* r = refuted(g);
    REQUIRE(r);
    CHECK(r->counterexample->summary.find("head 7") != std::string::npos);
    recheck_subset_witness(*r, whole, 0, gapped, cache);

    // Group -> group: target rank 1 holds head 7, no source rank does.
    g = prove::prove_group(gapped, correct, cache, options);
    CHECK(g.proof.reason == Reason::MissingPositions);
    r = refuted(g);
    REQUIRE(r);
    CHECK(r->counterexample->summary.find("head 7") != std::string::npos);
    CHECK(r->counterexample->summary.find("target rank 1") != std::string::npos);
    recheck_subset_witness(*r, correct, 1, gapped, cache);

    // Whole -> group: every byte the group holds arrives, head 7 is dropped.
    g = prove::prove_group(whole, gapped, cache, options);
    CHECK(g.proof.grade == Grade::Subset);
    r = refuted(g);
    REQUIRE(r);
    CHECK(r->counterexample->summary.find("head 7") != std::string::npos);
    recheck_subset_witness(*r, whole, 0, gapped, cache);
  }
}

TEST_CASE("replicated heads mapped by modulo instead of division: refused, naming the rank and the head",
          "[prove][group]") {
  TempDir dir;
  auto cache = cache_named("small");  // 4 KV heads; TP 8 puts each head on two ranks
  // The ownership rule by modulo (rank r holds head r % 4), the storage still by division (the tensor's
  // head slot is head - r / 2): rank 1 claims head 1 and has one slot, at head 0.
  auto modulo = edited_family(dir, "tp-modulo", [](spec::Json& j) {
    j["holds"] = "head >= tp_rank % num_kv_heads * heads_per_rank && head < tp_rank % num_kv_heads * heads_per_rank + heads_per_rank";
  });
  auto whole = group(layout_named("vllm-flash-nhd"), cache);
  prove::GroupProof g = prove::prove_group(whole, group(modulo, cache, 8), cache);
  CHECK(g.proof.grade == Grade::Refused);
  CHECK(g.proof.reason == Reason::OutOfBounds);
  const auto* r = refuted(g);
  REQUIRE(r);
  CHECK(r->detail.find("target rank 1") == 0);
  REQUIRE(r->counterexample);
  CHECK(r->counterexample->summary.find("target rank 1") == 0);
  CHECK(r->counterexample->summary.find("head 1") != std::string::npos);
  // The correct family at the same size is exact: the refusal is the ownership rule's.
  CHECK(prove::prove_group(whole, group(layout_named("vllm-flash-nhd-tp"), cache, 8), cache).proof.grade == Grade::ExactToken);
}

TEST_CASE("group covers and carries: the domain cells and the solver agree on random ownership rules",
          "[prove][group]") {
  TempDir dir;
  auto cache = cache_named("small");  // 4 heads, 2 layers
  std::mt19937 rng(20261201);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // A family of `ranks` ranks, rank r holding one random (head, layer) box, stored in a whole-sized
  // tensor (global head index) so that every rule is in bounds.
  auto random_family = [&](const std::string& name, int ranks) {
    std::string holds;
    for (int r = 0; r < ranks; ++r) {
      int h0 = pick(0, 3), h1 = pick(h0 + 1, 4), l0 = pick(0, 1), l1 = pick(l0 + 1, 2);
      holds += (holds.empty() ? "" : " || ") + std::string("(tp_rank == ") + std::to_string(r) + " && head >= " +
               std::to_string(h0) + " && head < " + std::to_string(h1) + " && layer >= " + std::to_string(l0) +
               " && layer < " + std::to_string(l1) + ")";
    }
    return edited_family(dir, name, [&](spec::Json& j) {
      j["holds"] = holds;
      j["params"]["tp_size"] = ranks;
      j["requires"] = spec::Json::array({"tp_rank >= 0 && tp_rank < tp_size"});
      j["tensors"][0]["shape"][3] = "num_kv_heads";
      j["tensors"][0]["index"][3] = "head";
    });
  };
  int refuted_seen = 0, proved_seen = 0;
  for (int round = 0; round < 12; ++round) {
    auto s = group(random_family("random-s" + std::to_string(round), pick(1, 3)), cache);
    auto t = group(random_family("random-t" + std::to_string(round), pick(1, 3)), cache);
    prove::ProveOptions solver_only;
    solver_only.normalise = false;
    prove::GroupProof by_cells = prove::prove_group(s, t, cache);
    prove::GroupProof by_solver = prove::prove_group(s, t, cache, solver_only);
    for (const char* name : {"covers", "carries"}) {
      auto find = [&](const prove::GroupProof& g) -> const prove::ObligationResult* {
        for (std::size_t i = 0; i < g.proof.obligations.size(); ++i)
          if (g.proof.obligations[i].name == name && g.proof.instances[i] == "group") return &g.proof.obligations[i];
        return nullptr;
      };
      const auto* a = find(by_cells);
      const auto* b = find(by_solver);
      REQUIRE(a);
      REQUIRE(b);
      INFO("round " << round << " " << name << ": " << a->detail << " / " << b->detail);
      CHECK(a->method == "domain cells");
      CHECK(b->method == "z3");
      CHECK(a->status == b->status);
      (a->status == prove::Status::Refuted ? refuted_seen : proved_seen) += 1;
      if (a->status == prove::Status::Refuted) {
        const bool covers = std::string(name) == "covers";
        // Both witnesses are located again: held by the instance named, by no instance of the other side.
        for (const auto* r : {a, b}) {
          const auto& summary = r->counterexample->summary;
          const layout::Group& holder = covers ? t : s;
          std::size_t member = 0;
          for (std::size_t m = 0; m < holder.members.size(); ++m)
            if (summary.find(holder.label(m) + ",") != std::string::npos) member = m;
          recheck_subset_witness(*r, holder, member, covers ? s : t, cache);
        }
      }
    }
    CHECK(by_cells.proof.grade == by_solver.proof.grade);
  }
  // The seed exercises both outcomes.
  CHECK(refuted_seen > 0);
  CHECK(proved_seen > 0);
}

}  // namespace kvlayout::test

// Group kernels (emit/group_kernels.hpp): every kernel emitted for a group translation on the small cache
// (4 KV heads, 2 layers, 67 tokens), compiled and run, against an oracle of its own: each source instance's
// buffers hold a pattern that is a function of the logical position (layer, kv, token, head, dim) only, so
// replicas agree; every target buffer is poisoned; all kernels of each target rank run; then every position
// each target instance holds (read through layout::locate) must equal the pattern and no other byte may
// have been written. Controls: a kernel dropped from the set, and two ranks' source buffers swapped, must
// be reported (missing and wrong positions). The plans of the same pieces (check/plan_emit_group.hpp) are
// each accepted by plan check of their pair, and one given to the wrong pair is not.
#include <catch2/catch.hpp>

#include "check/plan_check.hpp"
#include "check/plan_emit_group.hpp"
#include "emit/group_kernels.hpp"
#include "emit/kernel_fixture.hpp"
#include "enumerate/storage.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "prove/side_cache.hpp"
#include "spec/catalog.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

constexpr std::uint8_t kPoison = 0xEE;
constexpr std::uint8_t kUnheld = 0x5A;  // source bytes no position is stored in

std::shared_ptr<const spec::Layout> named(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_layout(catalog.find_layout(name).string());
}

spec::CacheShape small_cache() {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache("small").string());
}

// Byte b of the pattern element at the position with linear number `position` (over the coordinate
// extents, the same for every instance): position + 1, little-endian, so no two positions share a value
// and none is the poison (the small cache has 17152 positions, below 0xEEEE).
std::uint8_t pattern_byte(std::int64_t position, int b) { return static_cast<std::uint8_t>((position + 1) >> (8 * b)); }

// Every logical coordinate of a bound layout, with its linear number.
template <typename Visit>
void each_position(const layout::BoundLayout& b, Visit visit) {
  std::vector<std::int64_t> c(b.coord_extents.size(), 0);
  for (std::int64_t linear = 0;; ++linear) {
    visit(c, linear);
    std::size_t i = c.size();
    while (i-- > 0) {
      if (++c[i] < b.coord_extents[i]) break;
      c[i] = 0;
    }
    if (i == static_cast<std::size_t>(-1)) return;
  }
}

// One instance's storage: one buffer per tensor instance, in declaration order (the ABI's src[] / dst[]).
struct Instance {
  std::shared_ptr<const layout::BoundLayout> bound;
  layout::BlockTables tables;
  std::vector<std::vector<std::int32_t>> tables32;
  std::vector<enumerate::Buffer> buffers;

  Instance(std::shared_ptr<const spec::Layout> l, const spec::CacheShape& cache, bool reversed)
      : bound(std::make_shared<layout::BoundLayout>(layout::bind(std::move(l), cache))) {
    REQUIRE(bound->fits());
    tables = reversed ? layout::reversed_tables(*bound) : layout::identity_tables(*bound);
    for (std::size_t t = 0; t < bound->tables.size(); ++t) {
      tables32.emplace_back();
      for (std::int64_t i = 0; i < bound->tables[t].length; ++i)
        tables32.back().push_back(static_cast<std::int32_t>(tables.entry(t, i)));
    }
    for (const auto& t : bound->tensors)
      for (std::int64_t i = 0; i < t.instances; ++i)
        buffers.emplace_back(static_cast<std::size_t>(t.size * bound->element_bytes()));
  }
  // The buffer and byte a held position is stored at.
  std::pair<std::size_t, std::int64_t> where(const layout::Location& loc) const {
    std::size_t buffer = 0;
    for (int t = 0; t < loc.address.tensor; ++t) buffer += static_cast<std::size_t>(bound->tensors[static_cast<std::size_t>(t)].instances);
    return {buffer + static_cast<std::size_t>(loc.address.instance), layout::byte_offset(*bound, loc.address)};
  }
  std::vector<void*> bases() {
    std::vector<void*> out;
    for (auto& b : buffers) out.push_back(b.data());
    return out;
  }
  std::vector<const std::int32_t*> table_pointers() const {
    std::vector<const std::int32_t*> out;
    for (const auto& t : tables32) out.push_back(t.data());
    return out;
  }
};

void fill_source(Instance& s) {
  std::int64_t positions = 1;
  for (auto e : s.bound->coord_extents) positions *= e;
  REQUIRE(s.bound->element_bytes() >= 2);
  REQUIRE(positions < 0xEEEE);
  for (auto& b : s.buffers) std::fill(b.begin(), b.end(), kUnheld);
  const int bytes = s.bound->element_bytes();
  each_position(*s.bound, [&](const std::vector<std::int64_t>& c, std::int64_t linear) {
    layout::Location loc = layout::locate(*s.bound, c, s.tables);
    if (loc.placement != layout::Placement::Held) return;
    auto [buffer, at] = s.where(loc);
    for (int b = 0; b < bytes; ++b) s.buffers[buffer][static_cast<std::size_t>(at + b)] = pattern_byte(linear, b);
  });
}

struct OracleFindings {
  std::int64_t held = 0;     // positions the target instance holds with token < num_tokens
  std::int64_t missing = 0;  // ... left as poison
  std::int64_t wrong = 0;    // ... written with another value
  std::int64_t stray = 0;    // bytes written that no such position is stored in
};

OracleFindings check_target(const Instance& t, std::int64_t num_tokens) {
  OracleFindings f;
  const int bytes = t.bound->element_bytes();
  const int token = t.bound->coord_index("token");
  std::vector<std::vector<bool>> mine;
  for (const auto& b : t.buffers) mine.emplace_back(b.size(), false);
  each_position(*t.bound, [&](const std::vector<std::int64_t>& c, std::int64_t linear) {
    if (token >= 0 && c[static_cast<std::size_t>(token)] >= num_tokens) return;
    layout::Location loc = layout::locate(*t.bound, c, t.tables);
    if (loc.placement != layout::Placement::Held) return;
    ++f.held;
    auto [buffer, at] = t.where(loc);
    bool poison = true, right = true;
    for (int b = 0; b < bytes; ++b) {
      const std::uint8_t got = t.buffers[buffer][static_cast<std::size_t>(at + b)];
      poison = poison && got == kPoison;
      right = right && got == pattern_byte(linear, b);
      mine[buffer][static_cast<std::size_t>(at + b)] = true;
    }
    f.missing += poison;
    f.wrong += !poison && !right;
  });
  for (std::size_t b = 0; b < t.buffers.size(); ++b)
    for (std::size_t i = 0; i < t.buffers[b].size(); ++i) f.stray += !mine[b][i] && t.buffers[b][i] != kPoison;
  return f;
}

struct GroupCase {
  std::string source, target;
  std::map<std::string, std::int64_t> source_params, target_params;
  std::string text;
  // Filled in:
  prove::GroupProof proof;
  std::vector<emit::GroupPiece> pieces;
  std::vector<emit::GroupKernel> kernels;
};

GroupCase make_case(const std::string& source, std::map<std::string, std::int64_t> sp, const std::string& target,
                    std::map<std::string, std::int64_t> tp, std::size_t index, const spec::CacheShape& cache,
                    const prove::ProveOptions& options) {
  GroupCase c{source, target, sp, tp, "", {}, {}, {}};
  auto params = [](const std::map<std::string, std::int64_t>& p) {
    std::string out;
    for (const auto& [name, value] : p) out += " " + name + " " + std::to_string(value);
    return out;
  };
  c.text = source + params(sp) + " -> " + target + params(tp);
  layout::Group S = layout::expand_group(named(source), cache, sp), T = layout::expand_group(named(target), cache, tp);
  c.proof = prove::prove_group(S, T, cache, options);
  INFO(c.text << ": " << prove::grade_name(c.proof.proof.grade));
  REQUIRE(prove::is_exact(c.proof.proof.grade));
  c.pieces = emit::group_pieces(c.proof);
  emit::EmitOptions o;
  o.name = "group" + std::to_string(index);
  c.kernels = emit::emit_group_kernels(c.pieces, o);
  return c;
}

// Runs the kernels of `c` (all, or all but `drop`; with `swap_sources`, source ranks 0 and 1 trade buffers)
// into freshly poisoned targets and returns the oracle's findings summed over the target instances.
OracleFindings run_group(const GroupCase& c, const test::KernelLibrary& library, const spec::CacheShape& cache, bool reversed,
                         std::int64_t num_tokens, int threads, std::optional<std::size_t> drop = std::nullopt,
                         bool swap_sources = false) {
  std::vector<Instance> sources, targets;
  for (const auto& m : c.proof.source.members) {
    sources.emplace_back(m.layout, cache, reversed);
    fill_source(sources.back());
  }
  for (const auto& m : c.proof.target.members) {
    targets.emplace_back(m.layout, cache, !reversed);
    for (auto& b : targets.back().buffers) std::fill(b.begin(), b.end(), kPoison);
  }
  for (std::size_t k = 0; k < c.kernels.size(); ++k) {
    if (drop && *drop == k) continue;
    const auto& a = c.pieces[k].assignment;
    std::size_t s = a.source_member;
    if (swap_sources && s < 2) s = 1 - s;
    test::Kernel kernel = library.find(c.kernels[k].function);
    REQUIRE(kernel != nullptr);
    Instance& src = sources.at(s);
    Instance& dst = targets.at(a.target_member);
    auto sp = src.bases(), dp = dst.bases();
    auto st = src.table_pointers(), dt = dst.table_pointers();
    INFO(c.kernels[k].function);
    REQUIRE(kernel(sp.data(), dp.data(), st.empty() ? nullptr : st.data(), dt.empty() ? nullptr : dt.data(), num_tokens,
                   threads) == 0);
  }
  OracleFindings total;
  for (const auto& t : targets) {
    OracleFindings f = check_target(t, num_tokens);
    total.held += f.held;
    total.missing += f.missing;
    total.wrong += f.wrong;
    total.stray += f.stray;
  }
  return total;
}

}  // namespace

TEST_CASE("every emitted CPU group kernel fills its target ranks exactly, checked by a position oracle", "[emit][kernels][group]") {
  const spec::CacheShape cache = small_cache();
  REQUIRE(cache.params.at("num_kv_heads") == 4);
  prove::ProveOptions options;
  options.side_cache = std::make_shared<prove::SideCache>();
  const std::string whole = "vllm-flash-nhd", tp = "vllm-flash-nhd-tp", tpp = "vllm-flash-nhd-tp-pp";
  using P = std::map<std::string, std::int64_t>;
  auto size = [](std::int64_t n) { return P{{"tp_size", n}}; };
  std::vector<GroupCase> cases;
  struct Spec {
    std::string s;
    P sp;
    std::string t;
    P tp;
    std::size_t kernels;  // rank pairs that exchange data
  };
  const std::vector<Spec> specs = {
      {whole, {}, tp, size(2), 2},       {whole, {}, tp, size(4), 4},       {tp, size(1), tp, size(2), 2},
      {tp, size(2), tp, size(1), 2},     {tp, size(2), tp, size(4), 4},     {tp, size(4), tp, size(2), 4},
      {tp, size(8), tp, size(1), 4},     {tp, size(1), tp, size(8), 8},     {tp, size(8), tp, size(2), 4},
      {tp, size(2), whole, {}, 2},
      // Pipeline stages (per_range tensors: a stage's instances start at its first layer) with TP.
      {tpp, P{{"pp_size", 2}, {"tp_size", 2}}, tp, size(1), 4},
      {whole, {}, tpp, P{{"pp_size", 2}, {"tp_size", 2}}, 4},
  };
  std::vector<std::string> sources(2);
  std::size_t total_kernels = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    cases.push_back(make_case(specs[i].s, specs[i].sp, specs[i].t, specs[i].tp, i, cache, options));
    INFO(cases.back().text);
    CHECK(cases.back().kernels.size() == specs[i].kernels);
    for (const auto& k : cases.back().kernels) sources[total_kernels++ % sources.size()] += k.text;
  }
  // Replicated heads (tp_size 8 on 4 KV heads): the lowest-numbered replica feeds, so 8 -> 1 reads ranks
  // 0, 2, 4, 6 only.
  for (const auto& p : cases[6].pieces) CHECK(p.source_rank % 2 == 0);
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  const std::int64_t full = cache.params.at("num_tokens");
  for (const GroupCase& c : cases) {
    for (bool reversed : {false, true}) {
      for (std::int64_t n : {full, std::int64_t{37}}) {
        INFO(c.text << (reversed ? ", reversed source tables" : ", reversed target tables") << ", num_tokens " << n);
        OracleFindings f = run_group(c, library, cache, reversed, n, reversed ? 3 : 1);
        CHECK(f.held > 0);
        CHECK(f.missing == 0);
        CHECK(f.wrong == 0);
        CHECK(f.stray == 0);
      }
    }
  }

  SECTION("controls: a kernel dropped, or two source ranks' buffers swapped, is reported") {
    // tp 2 -> 1: target rank 0 is fed heads 0..1 by source rank 0 and heads 2..3 by source rank 1.
    const GroupCase& c = cases[3];
    REQUIRE(c.kernels.size() == 2);
    REQUIRE(c.pieces[1].source_rank == 1);
    REQUIRE(c.pieces[1].assignment.heads);
    const auto& heads = *c.pieces[1].assignment.heads;
    OracleFindings dropped = run_group(c, library, cache, false, full, 1, std::size_t{1});
    // Exactly the dropped piece's positions are missing: layers x kv x tokens x its heads x dim.
    CHECK(dropped.missing == 2 * 2 * full * (heads.end - heads.first) * cache.params.at("head_size"));
    CHECK(dropped.wrong == 0);
    CHECK(dropped.stray == 0);
    OracleFindings swapped = run_group(c, library, cache, false, full, 1, std::nullopt, true);
    CHECK(swapped.wrong == swapped.held);  // every position arrives with another head's value
    CHECK(swapped.missing == 0);
    // 1 -> 8 dropping one of the eight kernels leaves one target rank empty.
    const GroupCase& wide = cases[7];
    OracleFindings one = run_group(wide, library, cache, false, full, 1, std::size_t{5});
    CHECK(one.missing == 2 * 2 * full * 1 * cache.params.at("head_size"));
  }
}

TEST_CASE("every plan of a group's rank pairs is accepted by plan check of its pair, and not of another", "[emit][group][plan-emit]") {
  const spec::CacheShape cache = small_cache();
  prove::ProveOptions options;
  options.side_cache = std::make_shared<prove::SideCache>();
  for (auto [s, t] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 2}, {4, 2}, {8, 2}}) {
    layout::Group S = layout::expand_group(named("vllm-flash-nhd-tp"), cache, {{"tp_size", s}});
    layout::Group T = layout::expand_group(named("vllm-flash-nhd-tp"), cache, {{"tp_size", t}});
    prove::GroupProof g = prove::prove_group(S, T, cache, options);
    REQUIRE(prove::is_exact(g.proof.grade));
    auto pieces = emit::group_pieces(g);
    for (check::PlanFormat format : {check::PlanFormat::Families, check::PlanFormat::Descriptors}) {
      auto plans = check::emit_group_plans(g, pieces, [&](const prove::Proof&) {
        check::PlanEmitOptions o;
        o.format = format;
        return o;
      });
      REQUIRE(plans["plans"].size() == pieces.size());
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        INFO("tp " << s << " -> " << t << ", " << plans["plans"][i]["piece"].get<std::string>());
        CHECK(plans["plans"][i]["target_rank"] == pieces[i].target_rank);
        CHECK(plans["plans"][i]["source_rank"] == pieces[i].source_rank);
        const nlohmann::json plan = plans["plans"][i]["plan"];
        auto ok = check::check_plan(*pieces[i].proof.source_bound, *pieces[i].proof.target_bound, plan, "<group plan>");
        INFO(ok.message);
        CHECK(ok.verdict == check::Verdict::Ok);
        // Control: the plan of another rank pair into another target rank is not this pair's plan.
        const std::size_t other = (i + 1) % pieces.size();
        if (pieces[other].target_rank != pieces[i].target_rank) {
          auto wrong = check::check_plan(*pieces[other].proof.source_bound, *pieces[other].proof.target_bound, plan, "<group plan>");
          CHECK(wrong.verdict != check::Verdict::Ok);
        }
      }
    }
  }
}

// kvlayout plan check, concrete forms: the expected move against brute force, a planted defect for every
// verdict with its fix graded OK, slot maps, a production-size plan, and plan verdicts against a simulation
// of the plan's byte copies on tagged buffers.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "check/expected_move.hpp"
#include "check/plan_check.hpp"
#include "check/plan_fixture.hpp"
#include "check/plan_explain.hpp"
#include "check/plan_scope.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"
#include "spec/layout.hpp"

using namespace kvlayout;
using test::BoundPair;

namespace {

std::int64_t addr(const nlohmann::json& v) {
  return v.is_number() ? v.get<std::int64_t>() : static_cast<std::int64_t>(std::stoull(v.get<std::string>(), nullptr, 0));
}

std::int64_t token_of(const layout::BoundLayout& b, const nlohmann::json& position) {
  (void)b;
  return position.at("position").at("token").get<std::int64_t>();
}

// The re-check a reader would do: the counterexample position is where it says, under the plan's tables.
void require_located(const layout::BoundLayout& b, const layout::BlockTables& tables, const nlohmann::json& cx) {
  std::vector<std::int64_t> coord;
  for (const auto& name : b.coord_names) coord.push_back(cx.at("position").at(name).get<std::int64_t>());
  const auto loc = layout::locate(b, coord, tables);
  REQUIRE(loc.placement == layout::Placement::Held);
  CHECK(loc.address.offset == cx.at("element").get<std::int64_t>());
  CHECK(loc.address.instance == cx.at("instance").get<std::int64_t>());
}

// Per-(layer, kv, block) descriptors as vLLM's NIXL connector registers them, between two blocks-first or
// K/V-first caches whose blocks hold tokens in one order: each block's K (or V) bytes are contiguous on
// both sides. Addresses from locate (the block's first position), tables on both sides.
nlohmann::json per_block_plan(const BoundPair& p, const layout::BlockTables& ts, const layout::BlockTables& tt, std::int64_t block_bytes) {
  const auto& T = p.target;
  const std::int64_t layers = T.coord_extents[0], tokens = T.coord_extents[2];
  nlohmann::json plan = {{"form", "descriptors"}, {"source_regions", test::regions_json(p.source, 0)},
                         {"target_regions", test::regions_json(T, 1)}};
  nlohmann::json sd = nlohmann::json::array(), td = nlohmann::json::array();
  for (std::int64_t l = 0; l < layers; ++l)
    for (std::int64_t kv = 0; kv < 2; ++kv)
      for (std::int64_t t = 0; t < tokens; t += 16) {
        const std::vector<std::int64_t> c = {l, kv, t, 0, 0};
        sd.push_back({test::address_of(p.source, 0, c, ts), block_bytes});
        td.push_back({test::address_of(T, 1, c, tt), block_bytes});
      }
  plan["source_descriptors"] = sd;
  plan["target_descriptors"] = td;
  plan["tables"] = {{"source.block_table", test::table_json(ts, p.source, 0)}, {"target.block_table", test::table_json(tt, T, 0)}};
  return plan;
}

check::CheckResult run(const BoundPair& p, const nlohmann::json& plan) { return check::check_plan(p.source, p.target, plan, "plan.json"); }

}  // namespace

TEST_CASE("plan check: the expected move equals locate over every position, byte for byte", "[check][plan]") {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"vllm-flash-nhd", "vllm-flash-hnd"}, {"vllm-flash-nhd", "sglang-mha"}, {"vllm-paged-legacy", "vllm-flash-nhd"},
      {"trtllm-pool", "vllm-flashinfer-nhd"}, {"vllm-flash-nhd", "vllm-flash-nhd-tp2-r1"}, {"flashinfer-hnd", "lmcache-2ltd"}};
  const std::vector<std::string> scopes = {"", "token < 40", "head >= 1 && token >= 5 && token < 50", "dim < 8 || layer == 1"};
  for (const auto& [s, t] : pairs)
    for (const auto& scope_text : scopes) {
      const BoundPair p = test::bind_pair(s, t, "small");
      const auto ts = layout::random_tables(p.source, 7), tt = layout::random_tables(p.target, 11);
      const expr::Expr scope = scope_text.empty() ? nullptr : layout::bind_expression(p.target, scope_text, "t", "/scope", true);
      const auto sl = check::storage_line(p.source), tl = check::storage_line(p.target);
      const check::ExpectedMove move = check::expected_move(p.source, p.target, ts, tt, scope, sl, tl);
      INFO(s << " -> " << t << " scope " << scope_text);
      // Brute force: target line byte -> source line byte, for in-scope positions both hold.
      std::vector<std::int64_t> want(static_cast<std::size_t>(tl.total), -1), got(static_cast<std::size_t>(tl.total), -1);
      std::int64_t positions = 0;
      const std::int64_t eb = tl.element_bytes;
      test::for_each_position(p.target.coord_extents, [&](const std::vector<std::int64_t>& c) {
        if (!check::in_scope(scope, c, p.target, tt)) return;
        const auto a = layout::locate(p.source, c, ts), b = layout::locate(p.target, c, tt);
        if (a.placement != layout::Placement::Held || b.placement != layout::Placement::Held) return;
        ++positions;
        const std::int64_t x = check::line_byte(sl, p.source, a), y = check::line_byte(tl, p.target, b);
        for (std::int64_t k = 0; k < eb; ++k) want[static_cast<std::size_t>(y + k)] = x + k;
      });
      for (std::size_t r = 0; r < move.runs.size(); ++r) {
        const auto& run = move.runs[r];
        if (run.slack) continue;
        for (std::int64_t k = 0; k < run.bytes; ++k) got[static_cast<std::size_t>(run.dst + k)] = run.src + k;
        // position_at agrees with locate at the run's first and last element.
        for (std::int64_t e : {std::int64_t{0}, run.bytes / eb - 1}) {
          const auto c = check::position_at(move, p.target, run, e);
          const auto b = layout::locate(p.target, c, tt);
          REQUIRE(b.placement == layout::Placement::Held);
          CHECK(check::line_byte(tl, p.target, b) == run.dst + e * eb);
        }
      }
      CHECK(move.positions == positions);
      CHECK(got == want);
      CHECK(move.runs.size() < static_cast<std::size_t>(positions));  // runs, not elements
    }
}

TEST_CASE("plan check: a planted defect for every verdict, each fix graded OK", "[check][plan]") {
  // vLLM (FlashAttention, K/V-first) -> FlashInfer (blocks-first), NIXL-style per-block K and V descriptors.
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flashinfer-nhd", "small");
  const auto ts = layout::random_tables(p.source, 3), tt = layout::random_tables(p.target, 5);
  const std::int64_t block = 16 * 4 * 16 * 2;
  const nlohmann::json good = per_block_plan(p, ts, tt, block);
  const std::int64_t blocks = 5;  // 67 tokens: the last block is partial

  SECTION("the correct plan, as descriptors, as strided runs and as transfers") {
    auto r = run(p, good);
    CHECK(r.verdict == check::Verdict::Ok);
    CHECK(*r.checked_descriptors == 2 * 2 * blocks);
    CHECK(*r.checked_bytes == 2 * 2 * blocks * block);
    nlohmann::json runs = good;
    runs.erase("source_descriptors");
    runs.erase("target_descriptors");
    runs["source_runs"] = nlohmann::json::array();
    runs["target_runs"] = nlohmann::json::array();
    for (const auto& d : good["source_descriptors"]) runs["source_runs"].push_back({{"addr", d[0]}, {"len", d[1]}, {"stride", 0}, {"count", 1}});
    for (const auto& d : good["target_descriptors"]) runs["target_runs"].push_back({{"addr", d[0]}, {"len", d[1]}, {"stride", 0}, {"count", 1}});
    CHECK(run(p, runs).verdict == check::Verdict::Ok);
    nlohmann::json transfers = good;
    transfers.erase("source_descriptors");
    transfers.erase("target_descriptors");
    for (std::size_t i = 0; i < good["source_descriptors"].size(); ++i)
      transfers["transfers"].push_back({{"src", good["source_descriptors"][i][0]}, {"dst", good["target_descriptors"][i][0]}, {"len", block}});
    CHECK(run(p, transfers).verdict == check::Verdict::Ok);
  }
  SECTION("pairing blocks off by one: WRONG_MAPPING, P and Q re-checked") {
    nlohmann::json bad = good;
    bad["pairs"] = nlohmann::json::array();
    for (std::int64_t i = 0; i < 2 * 2 * blocks; ++i) bad["pairs"].push_back({i, i % blocks == blocks - 1 ? i - (blocks - 1) : i + 1});
    auto r = run(p, bad);
    REQUIRE(r.verdict == check::Verdict::WrongMapping);
    const auto& cx = r.counterexample;
    require_located(p.target, tt, cx["destination"]);
    require_located(p.source, ts, cx["source"]);
    const std::int64_t shift = token_of(p.target, cx["destination"]) - token_of(p.source, cx["source"]);
    CHECK(shift != 0);
    CHECK(shift % 16 == 0);  // another block's token at the same slot
    CHECK(cx["destination"].contains("tables"));
  }
  SECTION("a plan writing a neighbour's block: FRAME_VIOLATION") {
    nlohmann::json bad = good;
    bad["scope"] = "token < 32";  // the request owns blocks 0 and 1; the plan still sends all five
    auto r = run(p, bad);
    REQUIRE(r.verdict == check::Verdict::FrameViolation);
    require_located(p.target, tt, r.counterexample["destination"]);
    CHECK(token_of(p.target, r.counterexample["destination"]) >= 32);
    // The fix: only the request's blocks.
    nlohmann::json fixed = bad;
    fixed["source_descriptors"] = nlohmann::json::array();
    fixed["target_descriptors"] = nlohmann::json::array();
    for (std::size_t i = 0; i < good["source_descriptors"].size(); ++i)
      if (static_cast<std::int64_t>(i) % blocks < 2) {
        fixed["source_descriptors"].push_back(good["source_descriptors"][i]);
        fixed["target_descriptors"].push_back(good["target_descriptors"][i]);
      }
    CHECK(run(p, fixed).verdict == check::Verdict::Ok);
  }
  SECTION("a plan that misses the last partial block: UNCOVERED with a count, token ranges and a position") {
    nlohmann::json bad = good;
    for (auto side : {"source_descriptors", "target_descriptors"}) {
      nlohmann::json kept = nlohmann::json::array();
      for (std::size_t i = 0; i < good[side].size(); ++i)
        if (static_cast<std::int64_t>(i) % blocks != blocks - 1) kept.push_back(good[side][i]);
      bad[side] = kept;
    }
    auto r = run(p, bad);
    REQUIRE(r.verdict == check::Verdict::Uncovered);
    CHECK(r.counterexample["count"] == 2 * 2 * 3 * 4 * 16);
    CHECK(r.counterexample["token_ranges"] == nlohmann::json::array({{64, 66}}));
    require_located(p.target, tt, r.counterexample["position"]);
  }
  SECTION("two descriptors writing one destination: ALIASED") {
    nlohmann::json bad = good;
    bad["target_descriptors"][1] = bad["target_descriptors"][0];
    auto r = run(p, bad);
    REQUIRE(r.verdict == check::Verdict::Aliased);
    require_located(p.target, tt, r.counterexample["destination"]);
    CHECK(r.counterexample["first_source"]["text"] != r.counterexample["second_source"]["text"]);
  }
  SECTION("an address outside its region: OUT_OF_BOUNDS") {
    nlohmann::json bad = good;
    bad["target_descriptors"][3][0] = bad["target_descriptors"][3][0].get<std::int64_t>() + (std::int64_t{1} << 29);
    auto r = run(p, bad);
    REQUIRE(r.verdict == check::Verdict::OutOfBounds);
    CHECK(r.counterexample["side"] == "target");
    nlohmann::json past = good;  // inside the region's address range, but past the tensor instance
    past["target_regions"][0]["len"] = std::int64_t{1} << 30;
    past["target_descriptors"][0][0] = test::region_base(1, 0, 0) + 2 * blocks * block;
    CHECK(run(p, past).verdict == check::Verdict::OutOfBounds);
  }
  SECTION("padding written: FRAME_VIOLATION (sglang's reserved page 0)") {
    const BoundPair q = test::bind_pair("vllm-flash-nhd", "sglang-mha", "small");
    const auto qs = layout::identity_tables(q.source), qt = layout::identity_tables(q.target);
    nlohmann::json plan = test::plan_by_locate(q, qs, qt, nullptr);
    CHECK(run(q, plan).verdict == check::Verdict::Ok);
    plan["source_descriptors"][0][1] = 128;  // token 0 (layer 0, K) alone, sent to page 0: the dummy slot
    plan["target_descriptors"][0][1] = 128;
    plan["target_descriptors"][0][0] = test::region_base(1, 0, 0);
    auto r = run(q, plan);
    REQUIRE(r.verdict == check::Verdict::FrameViolation);
    CHECK(r.counterexample["destination"]["padding"] == true);
  }
}

TEST_CASE("plan check: element types differ: VALUE_CHANGE before anything else", "[check][plan]") {
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flash-nhd-fp8", "small");
  const BoundPair same = test::bind_pair("vllm-flash-nhd", "vllm-flash-nhd", "small");
  const auto ts = layout::identity_tables(same.source);
  nlohmann::json plan = test::plan_by_locate(same, ts, ts, nullptr);
  plan["target_regions"] = test::regions_json(p.target, 1);
  auto r = run(p, plan);
  REQUIRE(r.verdict == check::Verdict::ValueChange);
  CHECK(r.counterexample["target_dtype"] == "fp8_e4m3");
  require_located(p.target, layout::identity_tables(p.target), r.counterexample["target"]);
  CHECK(run(same, plan).verdict == check::Verdict::Ok);  // the control: same types
}

TEST_CASE("plan check: bad input is a SpecError naming the plan path", "[check][plan]") {
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flash-nhd", "small");
  const auto ts = layout::identity_tables(p.source);
  const nlohmann::json good = per_block_plan(p, ts, ts, 2048);
  auto path_of = [&](const nlohmann::json& plan) {
    try {
      run(p, plan);
    } catch (const spec::SpecError& e) {
      return e.path;
    }
    return std::string("no error");
  };
  nlohmann::json bad = good;
  bad["target_descriptors"][2][1] = 1024;
  CHECK(path_of(bad) == "/target_descriptors/2");  // paired lengths differ
  bad = good;
  bad["tables"]["target.page_table"] = {0};
  CHECK(path_of(bad) == "/tables/target.page_table");
  bad = good;
  bad["source_descriptors"][0][0] = "0xZZ";
  CHECK(path_of(bad) == "/source_descriptors/0/0");
  bad = good;
  bad["pairs"] = {{0, 99}};
  CHECK(path_of(bad) == "/pairs/0/1");
  bad = good;
  bad["scope"] = "tokn < 3";
  CHECK(path_of(bad) == "/scope");
  bad = good;
  bad["form"] = "dscriptors";
  CHECK(path_of(bad) == "/form");
  bad = good;
  bad["source_regions"][1] = bad["source_regions"][0];
  CHECK(path_of(bad).rfind("/source_regions/", 0) == 0);
}

TEST_CASE("plan check: slot maps", "[check][plan]") {
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flashinfer-nhd", "small");
  const nlohmann::json good = {{"form", "slots"}, {"granularity", "block"}, {"block_size", 16}, {"tokens", {0, 40}},
                               {"source_blocks", {4, 0, 2}}, {"target_blocks", {1, 3, 0}}};
  auto r = run(p, good);
  REQUIRE(r.verdict == check::Verdict::Ok);
  CHECK(*r.checked_bytes == 40 * 2 * 2 * 4 * 16 * 2);
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return run(p, j);
  };
  CHECK(with("target_blocks", {1, 3, 9}).verdict == check::Verdict::OutOfBounds);
  CHECK(with("target_blocks", {1, 3, 1}).verdict == check::Verdict::Aliased);
  auto dup = with("source_blocks", {4, 0, 4});
  CHECK(dup.verdict == check::Verdict::WrongMapping);
  require_located(p.target, layout::tables_with(p.target, {{{2, 0}}}), dup.counterexample["destination"]);
  CHECK(with("target_blocks", {1, 3, 0, 2}).verdict == check::Verdict::FrameViolation);
  auto short_map = with("target_blocks", {1, 3});  // misses the last partial block
  REQUIRE(short_map.verdict == check::Verdict::Uncovered);
  CHECK(short_map.counterexample["count"] == 8);
  CHECK(short_map.counterexample["token_ranges"] == nlohmann::json::array({{32, 39}}));

  // Token granularity (SGLang / LMCache): slot = block * 16 + token % 16.
  nlohmann::json tok = {{"form", "slots"}, {"granularity", "token"}, {"block_size", 16}, {"tokens", {16, 20}},
                        {"source_slots", {48, 49, 50, 51}}, {"target_slots", {0, 1, 2, 3}}};
  CHECK(run(p, tok).verdict == check::Verdict::Ok);
  tok["target_slots"] = {1, 2, 3, 4};  // shifted by one slot: tokens not preserved
  CHECK(run(p, tok).verdict == check::Verdict::WrongMapping);
  tok["target_slots"] = {0, 1, 2, 19};  // one token in another block than its block-mates
  CHECK(run(p, tok).verdict == check::Verdict::WrongMapping);
  tok["target_slots"] = {0, 1, 2, 2};
  CHECK(run(p, tok).verdict == check::Verdict::Aliased);
  nlohmann::json straddle = {{"form", "slots"}, {"granularity", "token"}, {"block_size", 16}, {"tokens", {14, 18}},
                             {"source_slots", {14, 15, 16, 17}}, {"target_slots", {46, 47, 48, 49}}};
  CHECK(run(p, straddle).verdict == check::Verdict::Ok);
  straddle["target_slots"] = {46, 47, 32, 33};  // logical blocks 0 and 1 both in target block 2
  CHECK(run(p, straddle).verdict == check::Verdict::Aliased);
  straddle["target_slots"] = {46, 47, 48, 49};
  straddle["source_slots"] = {14, 15, 0, 1};  // ... both in source block 0
  CHECK(run(p, straddle).verdict == check::Verdict::WrongMapping);
  tok["target_slots"] = {0, 1, 2};
  CHECK(run(p, tok).verdict == check::Verdict::Uncovered);
  tok["target_slots"] = {0, 1, 2, 3, 4};
  CHECK(run(p, tok).verdict == check::Verdict::FrameViolation);
  // Source and target of other block sizes: vLLM blocks of 16 into SGLang pages of 1.
  const BoundPair q = test::bind_pair("vllm-flash-nhd", "sglang-mha", "small");
  nlohmann::json mixed = {{"form", "slots"}, {"granularity", "token"}, {"source_block_size", 16}, {"target_block_size", 1},
                          {"tokens", {0, 3}}, {"source_slots", {32, 33, 34}}, {"target_slots", {5, 9, 7}}};
  CHECK(run(q, mixed).verdict == check::Verdict::Ok);
  mixed["target_slots"] = {5, 9, 0};  // page 0 is sglang's dummy: outside the table range [1, ...)
  CHECK(run(q, mixed).verdict == check::Verdict::OutOfBounds);
  mixed["target_block_size"] = 16;  // sglang-mha does not index page_table by token / 16
  CHECK_THROWS_AS(run(q, mixed), spec::SpecError);
}

TEST_CASE("plan check: a correct plan at production size (llama-3.1-8b), and its control", "[check][plan]") {
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flashinfer-nhd", "llama-3.1-8b", {{"num_tokens", 16384}});
  const auto ts = layout::random_tables(p.source, 1), tt = layout::random_tables(p.target, 2);
  nlohmann::json plan = per_block_plan(p, ts, tt, 16 * 8 * 128 * 2);
  REQUIRE(plan["source_descriptors"].size() == 32 * 2 * 1024);
  auto r = run(p, plan);
  CHECK(r.verdict == check::Verdict::Ok);
  CHECK(*r.checked_bytes == std::int64_t{32} * 2 * 16384 * 8 * 128 * 2);
  std::swap(plan["target_descriptors"][100], plan["target_descriptors"][101]);
  auto bad = run(p, plan);
  REQUIRE(bad.verdict == check::Verdict::WrongMapping);
  require_located(p.target, tt, bad.counterexample["destination"]);
}

TEST_CASE("plan check: verdicts agree with a simulation of the plan's copies on tagged buffers", "[check][plan]") {
  struct Case {
    std::string s, t;
  };
  const std::vector<Case> cases = {{"vllm-flash-nhd", "vllm-flash-hnd"}, {"vllm-flash-nhd", "vllm-flashinfer-nhd"}, {"vllm-flash-nhd", "sglang-mha"},
                                   {"vllm-flash-nhd", "vllm-flash-nhd-tp2-r1"}, {"vllm-paged-legacy", "vllm-flash-nhd"}, {"trtllm-pool", "lmcache-2ltd"}};
  std::mt19937_64 rng(42);
  int ok = 0, refuted = 0;
  for (const auto& c : cases) {
    const BoundPair p = test::bind_pair(c.s, c.t, "small");
    // The same layouts bound with whole blocks: the slack of the partial last block becomes held there.
    const BoundPair whole = test::bind_pair(c.s, c.t, "small", {{"num_tokens", 80}});
    const bool slack_ok = whole.target.tensors[0].size == p.target.tensors[0].size && whole.source.tensors[0].size == p.source.tensors[0].size &&
                          whole.target.tensors[0].instances == p.target.tensors[0].instances;
    for (int trial = 0; trial < 24; ++trial) {
      const auto ts = layout::random_tables(p.source, rng()), tt = layout::random_tables(p.target, rng());
      const std::int64_t limit = trial % 3 == 0 ? 67 : 16 * static_cast<std::int64_t>(1 + rng() % 4);
      std::function<bool(const std::vector<std::int64_t>&)> scope = [limit](const std::vector<std::int64_t>& x) { return x[2] < limit; };
      nlohmann::json plan = test::plan_by_locate(p, ts, tt, scope);
      plan["scope"] = "token < " + std::to_string(limit);
      auto& sd = plan["source_descriptors"];
      auto& td = plan["target_descriptors"];
      const std::size_t n = sd.size();
      const std::size_t i = rng() % n, j = rng() % n;
      switch (trial % 6) {
        case 0: break;  // correct
        case 1: std::swap(td[i], td[j]); if (td[i][1] != sd[i][1] || td[j][1] != sd[j][1]) std::swap(td[i], td[j]); break;
        case 2: sd.erase(i); td.erase(i); break;
        case 3: td[i][0] = addr(td[i][0]) + 2; break;  // one element off, mid-element
        case 4: sd[i][0] = addr(sd[i][0]) + 4 * static_cast<std::int64_t>(rng() % 8); break;
        case 5: plan["scope"] = "token < " + std::to_string(limit - 1); scope = [limit](const std::vector<std::int64_t>& x) { return x[2] < limit - 1; }; break;
      }
      bool simulated = false;
      try {
        simulated = test::simulate_ok(p, slack_ok ? &whole : nullptr, plan, ts, tt, scope);
      } catch (const std::exception&) {
        simulated = false;
      }
      check::CheckResult r;
      try {
        r = run(p, plan);
      } catch (const spec::SpecError&) {
        r.verdict = check::Verdict::OutOfBounds;  // not a verdict, but not OK either
      }
      INFO(c.s << " -> " << c.t << " trial " << trial << ": " << check::code(r.verdict) << " " << r.message);
      CHECK((r.verdict == check::Verdict::Ok) == simulated);
      (simulated ? ok : refuted)++;
    }
  }
  CHECK(ok > 0);
  CHECK(refuted > 0);
}

TEST_CASE("plan check: the expected move equals locate for every shipped engine", "[check][plan]") {
  namespace fs = std::filesystem;
  std::vector<std::string> heads, mla;
  for (const auto& e : fs::directory_iterator(fs::path(KVLAYOUT_SPECS_DIR) / "engines")) {
    const auto layout = spec::load_layout(e.path().string());
    (layout->content.name == "kv-heads" ? heads : mla).push_back(layout->name);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& n : heads) {
    pairs.push_back({"vllm-flash-nhd", n});
    pairs.push_back({n, "vllm-flashinfer-hnd"});
  }
  for (const auto& a : mla)
    for (const auto& b : mla) pairs.push_back({a, b});
  int compared = 0;
  for (const auto& [s, t] : pairs) {
    const BoundPair p = test::bind_pair(s, t, "small");
    if (!p.source.fits() || !p.target.fits() || p.source.coord_names != p.target.coord_names) continue;
    if (p.source.element_bytes() != p.target.element_bytes()) continue;  // VALUE_CHANGE before any move
    const auto ts = layout::random_tables(p.source, 17), tt = layout::random_tables(p.target, 19);
    const auto sl = check::storage_line(p.source), tl = check::storage_line(p.target);
    const std::vector<const char*> scopes = {"", "token >= 5 && token < 50"};
    std::vector<expr::Expr> bound_scopes;
    for (const char* scope_text : scopes)
      bound_scopes.push_back(*scope_text ? layout::bind_expression(p.target, scope_text, "t", "/scope", true) : nullptr);
    // The oracle for every scope in one pass over the positions (locate is most of this test's time).
    const std::int64_t eb = tl.element_bytes;
    std::vector<std::vector<std::int64_t>> wants(scopes.size(), std::vector<std::int64_t>(static_cast<std::size_t>(tl.total), -1));
    test::for_each_position(p.target.coord_extents, [&](const std::vector<std::int64_t>& c) {
      const auto a = layout::locate(p.source, c, ts), b = layout::locate(p.target, c, tt);
      if (a.placement != layout::Placement::Held || b.placement != layout::Placement::Held) return;
      const std::int64_t x = check::line_byte(sl, p.source, a), y = check::line_byte(tl, p.target, b);
      for (std::size_t i = 0; i < scopes.size(); ++i)
        if (check::in_scope(bound_scopes[i], c, p.target, tt))
          for (std::int64_t k = 0; k < eb; ++k) wants[i][static_cast<std::size_t>(y + k)] = x + k;
    });
    for (std::size_t i = 0; i < scopes.size(); ++i) {
      INFO(s << " -> " << t << " scope " << scopes[i]);
      const expr::Expr& scope = bound_scopes[i];
      check::ExpectedMove move;
      try {
        move = check::expected_move(p.source, p.target, ts, tt, scope, sl, tl);
      } catch (const emit::EmitError&) {
        continue;  // the plan checker answers UNKNOWN for such a pair
      }
      const std::vector<std::int64_t>& want = wants[i];
      std::vector<std::int64_t> got(static_cast<std::size_t>(tl.total), -1);
      for (const auto& run : move.runs)
        if (!run.slack)
          for (std::int64_t k = 0; k < run.bytes; ++k) got[static_cast<std::size_t>(run.dst + k)] = run.src + k;
      CHECK(got == want);
      ++compared;
    }
  }
  CHECK(compared >= 40);
}

TEST_CASE("plan check: strided runs as NIXL compresses them (count > 1), and a wrong stride", "[check][plan]") {
  // Identity tables: per (layer, K/V) the five blocks are one run on each side; K/V-first reads them back
  // to back (stride 2048), blocks-first writes every other 2048 bytes (stride 4096).
  const BoundPair p = test::bind_pair("vllm-flash-nhd", "vllm-flashinfer-nhd", "small");
  const auto ts = layout::identity_tables(p.source), tt = layout::identity_tables(p.target);
  nlohmann::json plan = {{"form", "descriptors"}, {"source_regions", test::regions_json(p.source, 0)},
                         {"target_regions", test::regions_json(p.target, 1)}};
  for (std::int64_t l = 0; l < 2; ++l)
    for (std::int64_t kv = 0; kv < 2; ++kv) {
      const std::vector<std::int64_t> c = {l, kv, 0, 0, 0};
      plan["source_runs"].push_back({{"addr", test::address_of(p.source, 0, c, ts)}, {"len", 2048}, {"stride", 2048}, {"count", 5}});
      plan["target_runs"].push_back({{"addr", test::address_of(p.target, 1, c, tt)}, {"len", 2048}, {"stride", 4096}, {"count", 5}});
    }
  auto r = run(p, plan);
  CHECK(r.verdict == check::Verdict::Ok);
  CHECK(*r.checked_descriptors == 20);
  plan["target_runs"][1]["stride"] = 2048;  // V written as if K/V-first: over the next blocks' K
  CHECK(run(p, plan).verdict == check::Verdict::Aliased);
  plan["target_runs"][1]["stride"] = 4096;
  std::swap(plan["target_runs"][0]["addr"], plan["target_runs"][1]["addr"]);  // K into V's places
  auto bad = run(p, plan);
  REQUIRE(bad.verdict == check::Verdict::WrongMapping);
  require_located(p.target, tt, bad.counterexample["destination"]);
  CHECK(bad.counterexample["copy"]["path"].get<std::string>().find("/target_runs/") != std::string::npos);
  std::swap(plan["target_runs"][0]["addr"], plan["target_runs"][1]["addr"]);
  plan["target_runs"][1]["stride"] = 4096;
  plan["pairs"] = {{0, 0}, {1, 1}};  // pairs index the descriptors the runs stand for: the rest unwritten
  CHECK(run(p, plan).verdict == check::Verdict::Uncovered);
}

// The families form of plan check: a correct per-(layer, block) K/V plan between two FlashInfer HND caches
// of llama-3.1-70b proven OK for every block table, each planted defect producing its verdict with a
// re-checked counterexample, the "at" hint never trusted, and every verdict cross-checked on the small
// cache by instantiating the members and copying tagged bytes (family_oracle.hpp).
#include <catch2/catch.hpp>

#include <fstream>
#include <optional>

#include "check/family_plan.hpp"
#include "check/plan_check.hpp"
#include "check/plan_families.hpp"
#include "family_oracle.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"

using namespace kvlayout;

namespace {

const std::string kData = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/families/";
const std::string kHnd = "vllm-flashinfer-hnd";

nlohmann::json read_plan(const std::string& name) {
  std::ifstream in(kData + name + ".json");
  return nlohmann::json::parse(in);
}

// A generous solver limit: under ASan+UBSan on a loaded 2-core machine a production query can take several
// seconds, and a limit reached is UNKNOWN (never OK), so a larger one can only turn UNKNOWN into an answer.
check::CheckResult check_named(const std::string& plan, const std::string& cache, const std::string& source = kHnd,
                               const std::string& target = kHnd) {
  prove::ProveOptions options;
  options.limit_ms = 60000;
  return check::check_plan(test::bind_named(source, cache), test::bind_named(target, cache), read_plan(plan), plan,
                           options);
}

// The same layouts bound with whole blocks on the small cache (the slack of the partial last block is held
// there), when that changes nothing else (the same allocations and tables); else nothing (no slack).
struct Whole {
  std::optional<layout::BoundLayout> s, t;
};
Whole whole_of(const layout::BoundLayout& s, const layout::BoundLayout& t) {
  Whole w;
  if (t.cache.name != "small") return w;
  layout::BoundLayout ws = test::bind_named(s.layout->name, "small", {{"num_tokens", 80}});
  layout::BoundLayout wt = test::bind_named(t.layout->name, "small", {{"num_tokens", 80}});
  auto same = [](const layout::BoundLayout& a, const layout::BoundLayout& b) {
    if (a.tensors.size() != b.tensors.size() || a.tables.size() != b.tables.size()) return false;
    for (std::size_t i = 0; i < a.tensors.size(); ++i)
      if (a.tensors[i].size != b.tensors[i].size || a.tensors[i].instances != b.tensors[i].instances) return false;
    for (std::size_t i = 0; i < a.tables.size(); ++i)
      if (a.tables[i].length != b.tables[i].length) return false;
    return true;
  };
  if (same(s, ws) && same(t, wt)) {
    w.s = std::move(ws);
    w.t = std::move(wt);
  }
  return w;
}

// The verdicts the oracle sees under identity, reversed and a few random tables (with the slack rule where
// the small cache has a partial last block).
std::set<check::Verdict> oracle(const layout::BoundLayout& s, const layout::BoundLayout& t, const nlohmann::json& plan) {
  const check::FamilyPlan fp = check::read_family_plan(s, t, plan, "plan");
  const Whole whole = whole_of(s, t);
  std::set<check::Verdict> all;
  std::vector<std::pair<layout::BlockTables, layout::BlockTables>> tables = {
      {layout::identity_tables(s), layout::identity_tables(t)}, {layout::reversed_tables(s), layout::identity_tables(t)}};
  for (std::uint64_t seed = 1; seed <= 3; ++seed) tables.push_back({layout::random_tables(s, seed), layout::random_tables(t, seed + 7)});
  for (const auto& [ts, tt] : tables) {
    std::set<check::Verdict> v = test::simulate_families(s, t, fp, ts, tt, whole.s ? &*whole.s : nullptr, whole.t ? &*whole.t : nullptr);
    all.insert(v.begin(), v.end());
  }
  return all;
}

// The checker (for all tables) and the oracle (for the tables tried) agree: OK exactly when the oracle
// sees nothing, and otherwise the checker's verdict is one the oracle saw. UNKNOWN (never a false OK) is
// accepted only where the caller says so.
void require_agreement(const check::CheckResult& r, const std::set<check::Verdict>& seen, bool unknown_allowed = false) {
  INFO(check::code(r.verdict) << ": " << r.message);
  if (r.verdict == check::Verdict::Ok) REQUIRE(seen.empty());
  else if (r.verdict == check::Verdict::Unknown) REQUIRE(unknown_allowed);
  else REQUIRE(seen.count(r.verdict) == 1);
}

}  // namespace

TEST_CASE("plan families: the per-block K and V plan is OK at production size for every table", "[plan-families]") {
  check::CheckResult r = check_named("kv_blocks_ok", "llama-3.1-70b");
  INFO(r.message);
  REQUIRE(r.verdict == check::Verdict::Ok);
  // 80 layers x 8192 blocks x 2 halves, each 32 KiB: the whole cache, counted, not enumerated.
  CHECK(*r.checked_descriptors == 80 * 8192 * 2);
  CHECK(*r.checked_bytes == std::int64_t{80} * 8192 * 65536);
  CHECK(r.counterexample.is_null());
}

TEST_CASE("plan families: each planted defect has its verdict at production size", "[plan-families]") {
  struct Case {
    const char* plan;
    check::Verdict verdict;
  };
  for (const Case& c : {Case{"off_by_one", check::Verdict::WrongMapping}, Case{"outside_scope", check::Verdict::FrameViolation},
                        Case{"missing_last_block", check::Verdict::Uncovered}, Case{"v_over_k", check::Verdict::Aliased},
                        Case{"past_allocation", check::Verdict::OutOfBounds}, Case{"scope_ok", check::Verdict::Ok}}) {
    check::CheckResult r = check_named(c.plan, "llama-3.1-70b");
    INFO(c.plan << ": " << check::code(r.verdict) << " " << r.message);
    REQUIRE(r.verdict == c.verdict);
    if (c.verdict != check::Verdict::Ok) {
      REQUIRE(r.counterexample.is_object());
      REQUIRE_FALSE(r.details.empty());
    }
  }
}

TEST_CASE("plan families: the wrong-mapping counterexample names both positions, re-checked", "[plan-families]") {
  const layout::BoundLayout s = test::bind_named(kHnd, "llama-3.1-70b"), t = test::bind_named(kHnd, "llama-3.1-70b");
  check::CheckResult r = check::check_plan(s, t, read_plan("off_by_one"), "off_by_one");
  REQUIRE(r.verdict == check::Verdict::WrongMapping);
  const auto& cx = r.counterexample;
  REQUIRE(cx.contains("destination"));
  REQUIRE(cx.contains("source"));
  // Re-locate the destination position under the tables the counterexample read: it is held where it says.
  std::vector<std::int64_t> x;
  for (const auto& name : t.coord_names) x.push_back(cx["destination"]["position"][name].get<std::int64_t>());
  std::vector<std::map<std::int64_t, std::int64_t>> fixed(t.tables.size());
  if (cx["destination"].contains("tables"))
    for (const auto& [entry, value] : cx["destination"]["tables"]["block_table"].items()) fixed[0][std::stoll(entry)] = value.get<std::int64_t>();
  layout::Location l = layout::locate(t, x, layout::tables_with(t, fixed));
  REQUIRE(l.placement == layout::Placement::Held);
  CHECK(l.address.offset == cx["destination"]["element"].get<std::int64_t>());
  // The source position is a different one (the neighbouring block's token).
  CHECK(cx["source"]["position"] != cx["destination"]["position"]);
}

TEST_CASE("plan families: bf16 to fp8 is a value change", "[plan-families]") {
  nlohmann::json plan = {{"form", "families"},
                         {"families", {{{"over", {{"layer", "num_layers"}}},
                                        {"source", {{"tensor", "kv_cache"}, {"instance", "layer"}, {"offset", "0"}}},
                                        {"target", {{"tensor", "kv_cache"}, {"instance", "layer"}, {"offset", "0"}}},
                                        {"bytes", "64"}}}}};
  check::CheckResult r = check::check_plan(test::bind_named("vllm-flash-nhd", "llama-3.1-70b"),
                                           test::bind_named("vllm-flash-nhd-fp8", "llama-3.1-70b"), plan, "inline");
  REQUIRE(r.verdict == check::Verdict::ValueChange);
  CHECK(r.counterexample["source_dtype"] == "bf16");
}

TEST_CASE("plan families: malformed plans are bad input naming the JSON path", "[plan-families]") {
  const layout::BoundLayout s = test::bind_named(kHnd, "small"), t = test::bind_named(kHnd, "small");
  auto expect_path = [&](nlohmann::json plan, const std::string& path) {
    try {
      check::check_plan(s, t, plan, "p.json");
      FAIL("accepted");
    } catch (const spec::SpecError& e) {
      CHECK(e.path == path);
    }
  };
  nlohmann::json ok = read_plan("kv_blocks_ok");
  nlohmann::json p = ok;
  p["families"][0]["source"]["ofset"] = "0";
  expect_path(p, "/families/0/source/ofset");
  p = ok;
  p["families"][1]["target"]["tensor"] = "kv";
  expect_path(p, "/families/1/target/tensor");
  p = ok;
  p["families"][0]["over"]["b"] = "token";
  expect_path(p, "/families/0/over/b");
  p = ok;
  p["families"][0]["bytes"] = "nope[b]";
  expect_path(p, "/families/0/bytes");
  p = ok;
  p["families"] = nlohmann::json::array();
  expect_path(p, "/families");
}

TEST_CASE("plan families: an \"at\" hint is proved, never trusted", "[plan-families]") {
  // On the small cache the last block is partial, so proving that no padding is written needs the hint.
  const layout::BoundLayout s = test::bind_named("vllm-flash-nhd", "small"), t = test::bind_named(kHnd, "small");
  nlohmann::json plan = {
      {"form", "families"},
      {"families", nlohmann::json::array()}};
  // Full blocks 0..3 and the 3 tokens of block 4, per (layer, kv, head, token): one head row of 16 dims.
  for (int part = 0; part < 2; ++part) {
    nlohmann::json over = {{"layer", 2}, {"kv", 2}, {"head", 4}, {"t", part == 0 ? 16 : 3}};
    if (part == 0) over["blk"] = 4;
    const std::string blk = part == 0 ? "blk" : "4";
    plan["families"].push_back(
        {{"over", over},
         {"source", {{"tensor", "kv_cache"}, {"instance", "layer"},
                     {"offset", "2 * (kv * num_blocks * 16 * 64 + source.block_table[" + blk + "] * 16 * 64 + t * 64 + head * 16)"}}},
         {"target", {{"tensor", "kv_cache"}, {"instance", "layer"},
                     {"offset", "2 * (target.block_table[" + blk + "] * 2 * 64 * 16 + kv * 64 * 16 + head * 16 * 16 + t * 16)"}}},
         {"bytes", "32"},
         {"at", {{"layer", "layer"}, {"kv", "kv"}, {"head", "head"}, {"token", blk + " * 16 + t"}, {"dim", "byte / 2"}}}});
  }
  check::CheckResult r = check::check_plan(s, t, plan, "hinted");
  INFO(r.message);
  REQUIRE(r.verdict == check::Verdict::Ok);
  require_agreement(r, oracle(s, t, plan));
  // A wrong hint (the token's block dropped) proves nothing: never OK, and the plan itself is unchanged.
  nlohmann::json bad = plan;
  bad["families"][0]["at"]["token"] = "t";
  check::CheckResult u = check::check_plan(s, t, bad, "bad hint");
  CHECK(u.verdict == check::Verdict::Unknown);
  // Without hints at all: UNKNOWN as well (W == N and the target has padding), never OK.
  nlohmann::json none = plan;
  for (auto& f : none["families"]) f.erase("at");
  CHECK(check::check_plan(s, t, none, "no hint").verdict == check::Verdict::Unknown);
}

TEST_CASE("plan families: verdicts agree with byte-copy enumeration on the small cache", "[plan-families]") {
  const layout::BoundLayout s = test::bind_named(kHnd, "small"), t = test::bind_named(kHnd, "small");
  for (const char* name : {"kv_blocks_ok", "off_by_one", "outside_scope", "scope_ok", "missing_last_block", "v_over_k", "past_allocation"}) {
    nlohmann::json plan = read_plan(name);
    check::CheckResult r = check::check_plan(s, t, plan, name);
    INFO(name);
    // On 67 tokens outside_scope (scope token < 1024) is kv_blocks_ok: both write the slack (see below).
    const bool writes_slack = std::string(name) == "kv_blocks_ok" || std::string(name) == "outside_scope";
    require_agreement(r, oracle(s, t, plan), writes_slack);
  }
  // Whole blocks on the small cache also write the slack of the partial last block (tokens 67..79), from the
  // same slots of the source: allowed, never required (the descriptors form's rule). The oracle sees nothing
  // wrong; the families checker does not prove slack for every table, so it says UNKNOWN, not
  // FRAME_VIOLATION, and says why.
  check::CheckResult whole = check_named("kv_blocks_ok", "small");
  CHECK(whole.verdict == check::Verdict::Unknown);
  CHECK_THAT(whole.message, Catch::Contains("slack of a partial last block"));
  CHECK(oracle(s, t, read_plan("kv_blocks_ok")).empty());
  CHECK(check_named("missing_last_block", "small").verdict == check::Verdict::Uncovered);
}

TEST_CASE("plan families: a per-token head slice to a tensor-parallel rank, at production and by enumeration", "[plan-families]") {
  // SGLang-style (one member per layer, K/V and token), full-head source to rank 1 of 2; the wrong one
  // starts the slice at tp_rank heads instead of tp_rank * heads_per_rank.
  for (const char* cache : {"llama-3.1-70b", "small"}) {
    const layout::BoundLayout s = test::bind_named("vllm-flash-nhd", cache), t = test::bind_named("vllm-flash-nhd-tp2-r1", cache);
    check::CheckResult ok = check::check_plan(s, t, read_plan("tp_head_slice_ok"), "ok");
    INFO(cache << ": " << ok.message);
    REQUIRE(ok.verdict == check::Verdict::Ok);
    check::CheckResult bad = check::check_plan(s, t, read_plan("tp_head_slice_rank_as_head"), "bad");
    REQUIRE(bad.verdict == check::Verdict::WrongMapping);
    CHECK(bad.counterexample["destination"]["position"]["head"] != bad.counterexample["source"]["position"]["head"]);
    if (std::string(cache) == "small") {
      require_agreement(ok, oracle(s, t, read_plan("tp_head_slice_ok")));
      require_agreement(bad, oracle(s, t, read_plan("tp_head_slice_rank_as_head")));
    }
  }
}

namespace {

// HND -> HND on the small cache (blocks of 4096 bytes: 2 halves x 4 heads x 16 tokens x 32 bytes): whole
// halves of blocks 0..3, the 3 real tokens 64..66 of block 4, and optionally the slack tokens 67..79 of
// block 4 read from `slack_from` (the source's block for them).
nlohmann::json exact_small_plan(const std::string& slack_from = "") {
  nlohmann::json plan = {{"form", "families"}, {"families", nlohmann::json::array()}};
  auto side = [](const std::string& table, const std::string& block, const std::string& extra) {
    return nlohmann::json{{"tensor", "kv_cache"}, {"instance", "layer"}, {"offset", table + "[" + block + "] * 4096 + kv * 2048" + extra}};
  };
  plan["families"].push_back({{"id", "full"}, {"over", {{"layer", 2}, {"b", 4}, {"kv", 2}}},
                              {"source", side("source.block_table", "b", "")}, {"target", side("target.block_table", "b", "")},
                              {"bytes", "2048"}});
  plan["families"].push_back({{"id", "last"}, {"over", {{"layer", 2}, {"kv", 2}, {"h", 4}}},
                              {"source", side("source.block_table", "4", " + h * 512")},
                              {"target", side("target.block_table", "4", " + h * 512")}, {"bytes", "96"}});
  if (!slack_from.empty())
    plan["families"].push_back({{"id", "slack"}, {"over", {{"layer", 2}, {"kv", 2}, {"h", 4}}},
                                {"source", side("source.block_table", slack_from, " + h * 512 + 96")},
                                {"target", side("target.block_table", "4", " + h * 512 + 96")}, {"bytes", "416"}});
  return plan;
}

}  // namespace

TEST_CASE("plan families: the slack of a partial last block follows the descriptors rule", "[plan-families]") {
  const layout::BoundLayout s = test::bind_named(kHnd, "small"), t = test::bind_named(kHnd, "small");
  // The slack receiving the same slots of the source: allowed (the oracle sees nothing), never required;
  // not proved for every table here, so UNKNOWN, never FRAME_VIOLATION, never a false OK.
  nlohmann::json own = exact_small_plan("4");
  check::CheckResult r = check::check_plan(s, t, own, "own slack");
  INFO(r.message);
  CHECK(r.verdict == check::Verdict::Unknown);
  CHECK_THAT(r.message, Catch::Contains("slack"));
  CHECK(oracle(s, t, own).empty());
  // The slack receiving real tokens of block 0: a padding write that is not slack, FRAME_VIOLATION, with
  // a concrete counterexample, as the oracle says.
  nlohmann::json wrong = exact_small_plan("0");
  check::CheckResult f = check::check_plan(s, t, wrong, "wrong slack");
  INFO(f.message);
  REQUIRE(f.verdict == check::Verdict::FrameViolation);
  CHECK(f.counterexample["family"] == "slack");
  CHECK(f.counterexample["target"]["byte"].get<std::int64_t>() % 512 >= 96);
  require_agreement(f, oracle(s, t, wrong));
  // Slack outside the scope is not allowed either.
  nlohmann::json narrow = exact_small_plan("4");
  narrow["scope"] = "token < 67";  // the same real tokens, but it excludes the slack positions 67..79
  check::CheckResult n = check::check_plan(s, t, narrow, "narrow");
  INFO(n.message);
  REQUIRE(n.verdict == check::Verdict::FrameViolation);
  require_agreement(n, oracle(s, t, narrow));
}

TEST_CASE("plan families: one byte written twice from the same source byte is not ALIASED", "[plan-families]") {
  for (const char* cache : {"small", "llama-3.1-70b"}) {
    const layout::BoundLayout s = test::bind_named(kHnd, cache), t = test::bind_named(kHnd, cache);
    // kv_blocks_ok with its K family given twice: harmless duplicates, but the count no longer decides.
    nlohmann::json twice = read_plan("kv_blocks_ok");
    twice["families"].push_back(twice["families"][0]);
    twice["families"][2]["id"] = "K again";
    check::CheckResult r = check::check_plan(s, t, twice, "twice");
    INFO(cache << ": " << r.message);
    CHECK(r.verdict == check::Verdict::Unknown);
    CHECK_THAT(r.message, Catch::Contains("from the same source byte"));
    // K twice and no V: the count balances (W == N), but an unwritten V position is found: UNCOVERED.
    nlohmann::json no_v = read_plan("kv_blocks_ok");
    no_v["families"][1] = no_v["families"][0];
    check::CheckResult u = check::check_plan(s, t, no_v, "no V");
    INFO(u.message);
    REQUIRE(u.verdict == check::Verdict::Uncovered);
    CHECK(u.counterexample["position"]["position"]["kv"] == 1);
    if (std::string(cache) == "small") {
      CHECK(oracle(s, t, twice).empty());
      require_agreement(u, oracle(s, t, no_v));
    }
  }
  // The control: the same target bytes from different source bytes (V over K) stay ALIASED.
  CHECK(check_named("v_over_k", "small").verdict == check::Verdict::Aliased);
}

TEST_CASE("plan families: unknown top-level members are ignored, unknown members inside a family are not", "[plan-families]") {
  const layout::BoundLayout s = test::bind_named(kHnd, "llama-3.1-70b"), t = test::bind_named(kHnd, "llama-3.1-70b");
  nlohmann::json plan = read_plan("off_by_one");
  plan["schema"] = "kvlayout-plan/1";
  plan["generator"] = {{"name", "an outside check"}};
  CHECK(check::check_plan(s, t, plan, "extra.json").verdict == check::Verdict::WrongMapping);
  plan["families"][0]["schema"] = 1;
  try {
    check::check_plan(s, t, plan, "extra.json");
    FAIL("accepted an unknown member inside a family");
  } catch (const spec::SpecError& e) {
    CHECK(e.path == "/families/0/schema");
  }
}

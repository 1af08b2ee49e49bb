// The group oracle: it grades group moves by enumeration as prove_group does by proof, on the small shape,
// for shipped families at several sizes and for planted bad families (written to a temp dir by editing the
// shipped JSON), and it fails where it must (a head no rank holds, a rank indexed past its tensor).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "enumerate/group_cross_check.hpp"
#include "layout/rank_group.hpp"
#include "prove/group.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;
using Params = std::map<std::string, std::int64_t>;

namespace {

std::shared_ptr<const spec::Layout> shipped(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_layout(catalog.find_layout(name).string());
}

spec::CacheShape small_with(const Params& changes = {}) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  spec::CacheShape s = spec::load_cache(catalog.find_cache("small").string());
  for (const auto& [k, v] : changes) s.params[k] = v;
  return s;
}

// A shipped declaration edited as JSON and written to `dir` under `name`.
std::shared_ptr<const spec::Layout> planted(const test::TempDir& dir, const std::string& from, const std::string& name,
                                            const std::function<void(spec::Json&)>& edit) {
  spec::Json d = spec::read_json_file((std::filesystem::path(KVLAYOUT_SPECS_DIR) / "engines" / (from + ".json")).string());
  d["name"] = name;
  edit(d);
  return spec::load_layout(dir.write("engines/" + name + ".json", d.dump(2)));
}

struct Move {
  std::shared_ptr<const spec::Layout> source;
  Params source_params;
  std::shared_ptr<const spec::Layout> target;
  Params target_params;
};

struct Both {
  prove::GroupProof proof;
  enumerate::CrossCheck cross;
};

Both decide(const Move& m, const spec::CacheShape& cache) {
  layout::Group S = layout::expand_group(m.source, cache, m.source_params);
  layout::Group T = layout::expand_group(m.target, cache, m.target_params);
  return {prove::prove_group(S, T, cache), enumerate::cross_check_group(S, T, cache)};
}

std::string text(const Move& m) {
  auto side = [](const std::shared_ptr<const spec::Layout>& l, const Params& p) {
    std::string out = l->name;
    for (const auto& [k, v] : p) out += " " + k + "=" + std::to_string(v);
    return out;
  };
  return side(m.source, m.source_params) + " -> " + side(m.target, m.target_params);
}

void check_agree(const Move& m, const spec::CacheShape& cache) {
  Both b = decide(m, cache);
  INFO(text(m) << " on " << cache.name << ": prover " << prove::grade_name(b.proof.proof.grade) << " ["
               << prove::info(b.proof.proof.reason).code << "], oracle " << prove::grade_name(b.cross.grade) << " ["
               << prove::info(b.cross.reason).code << "] " << b.cross.not_checked);
  CHECK(b.cross.checked);
  CHECK(b.cross.positions_checked > 0);
  CHECK(b.cross.grade == b.proof.proof.grade);
  CHECK(b.cross.reason == b.proof.proof.reason);
}

// vllm-flash-nhd-tp whose ownership rule leaves the last KV head to no rank.
void leave_last_head(spec::Json& d) {
  d["holds"] = "head >= first_head && head < first_head + heads_per_rank && head < num_kv_heads - 1";
}

}  // namespace

TEST_CASE("the group oracle agrees with prove_group on shipped families at several sizes", "[enumerate][group]") {
  auto tp = shipped("vllm-flash-nhd-tp"), whole = shipped("vllm-flash-nhd"), pp = shipped("vllm-flash-nhd-pp");
  auto sglang = shipped("sglang-mha-tp"), trtllm = shipped("trtllm-pool-tp"), tppp = shipped("vllm-flash-nhd-tp-pp");
  auto mla = shipped("vllm-mla"), mla_tp = shipped("vllm-mla-tp");
  const spec::CacheShape small = small_with();
  for (const Move& m : {Move{tp, {{"tp_size", 1}}, tp, {{"tp_size", 2}}}, Move{tp, {{"tp_size", 4}}, tp, {{"tp_size", 2}}},
                        Move{tp, {{"tp_size", 2}}, tp, {{"tp_size", 8}}}, Move{whole, {}, tp, {{"tp_size", 8}}},
                        Move{tp, {{"tp_size", 8}}, whole, {}}, Move{sglang, {{"tp_size", 2}}, tp, {{"tp_size", 4}}},
                        Move{tp, {{"tp_size", 4}}, trtllm, {{"tp_size", 8}}}, Move{pp, {{"pp_size", 2}}, whole, {}},
                        Move{tppp, {}, whole, {}}, Move{whole, {}, tppp, {{"tp_size", 8}}},
                        Move{mla_tp, {}, mla, {}}, Move{mla_tp, {}, tp, {}}})
    check_agree(m, small);
  // Replicated heads (2 KV heads on 4 and 8 ranks) and uneven stages (3 layers on 2 stages).
  check_agree(Move{tp, {{"tp_size", 4}}, tp, {{"tp_size", 1}}}, small_with({{"num_kv_heads", 2}}));
  check_agree(Move{tp, {{"tp_size", 2}}, tp, {{"tp_size", 8}}}, small_with({{"num_kv_heads", 2}}));
  check_agree(Move{pp, {{"pp_size", 1}}, pp, {{"pp_size", 2}}}, small_with({{"num_layers", 3}}));
}

TEST_CASE("the group oracle refuses a family that leaves a head to no rank, naming the rank", "[enumerate][group]") {
  test::TempDir dir;
  auto bad = planted(dir, "vllm-flash-nhd-tp", "tp-last-head-unowned", leave_last_head);
  auto tp = shipped("vllm-flash-nhd-tp"), whole = shipped("vllm-flash-nhd");
  const spec::CacheShape small = small_with();
  Move m{bad, {{"tp_size", 2}}, tp, {{"tp_size", 4}}};
  Both b = decide(m, small);
  CHECK(b.cross.grade == prove::Grade::Refused);
  CHECK(b.cross.reason == prove::Reason::MissingPositions);
  bool named = false;
  for (const auto& f : b.cross.findings)
    if (f.name == "covers") named = f.detail.find("target rank 3") != std::string::npos;
  CHECK(named);
  check_agree(m, small);
  // Gathered to a whole cache: the last head is missing; scattered from one: it is dropped.
  check_agree(Move{bad, {{"tp_size", 2}}, whole, {}}, small);
  check_agree(Move{whole, {}, bad, {{"tp_size", 4}}}, small);
  CHECK(decide(Move{whole, {}, bad, {{"tp_size", 4}}}, small).cross.reason == prove::Reason::DroppedPositions);
}

TEST_CASE("the group oracle refuses a rank that indexes its tensor by the global head", "[enumerate][group]") {
  test::TempDir dir;
  auto bad = planted(dir, "vllm-flash-nhd-tp", "tp-global-head-index",
                     [](spec::Json& d) { d["tensors"][0]["index"][3] = "head"; });
  const spec::CacheShape small = small_with();
  Move m{shipped("vllm-flash-nhd"), {}, bad, {{"tp_size", 2}}};
  Both b = decide(m, small);
  CHECK(b.cross.grade == prove::Grade::Refused);
  CHECK(b.cross.reason == prove::Reason::OutOfBounds);
  REQUIRE_FALSE(b.cross.findings.empty());
  CHECK_THAT(b.cross.findings.front().detail, Catch::StartsWith("target rank 1: "));
  check_agree(m, small);
}

TEST_CASE("the group oracle: a gap between PP stages is missing positions, an overlap is exact", "[enumerate][group]") {
  test::TempDir dir;
  // Stage 0 ends one layer early (a gap), or stage 1 starts one layer early (both hold that layer).
  auto gap = planted(dir, "vllm-flash-nhd-pp", "pp-gap", [](spec::Json& d) {
    d["params"]["end_layer"] = "(" + d["params"]["end_layer"].get<std::string>() + ") - max(0, 1 - pp_rank)";
  });
  auto overlap = planted(dir, "vllm-flash-nhd-pp", "pp-overlap", [](spec::Json& d) {
    d["params"]["first_layer"] = "(" + d["params"]["first_layer"].get<std::string>() + ") - min(pp_rank, 1)";
  });
  auto whole = shipped("vllm-flash-nhd"), pp = shipped("vllm-flash-nhd-pp");
  // 3 layers (uneven stages) and 64 tokens (whole blocks: no padding, so an exact move is EXACT_BYTE).
  const spec::CacheShape three = small_with({{"num_layers", 3}, {"num_tokens", 64}});
  Both g = decide(Move{gap, {}, whole, {}}, three);
  CHECK(g.cross.grade == prove::Grade::Refused);
  CHECK(g.cross.reason == prove::Reason::MissingPositions);
  check_agree(Move{gap, {}, whole, {}}, three);
  check_agree(Move{gap, {}, pp, {}}, three);
  for (const Move& m : {Move{overlap, {}, whole, {}}, Move{whole, {}, overlap, {}}, Move{overlap, {}, pp, {}}}) {
    Both b = decide(m, three);
    INFO(text(m));
    CHECK(b.cross.grade == prove::Grade::ExactByte);
    check_agree(m, three);
  }
}

TEST_CASE("the group oracle does not cross-check a group whose member does not fit", "[enumerate][group]") {
  // 4 ranks on 4 KV heads fit small; 3 ranks do not (num_kv_heads % tp_size).
  auto tp = shipped("vllm-flash-nhd-tp");
  const spec::CacheShape small = small_with();
  Both b = decide(Move{tp, {{"tp_size", 3}}, tp, {{"tp_size", 2}}}, small);
  CHECK_FALSE(b.cross.checked);
  CHECK(b.cross.positions_checked == 0);
  CHECK(b.cross.grade == prove::Grade::Refused);
  CHECK(b.cross.reason == prove::Reason::DoesNotFit);
  CHECK(b.proof.proof.reason == prove::Reason::DoesNotFit);
}

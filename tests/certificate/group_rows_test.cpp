// Group rows: every row of the table proven on its model and cross-checked by the group oracle on a small
// shape, the proof there agreeing with it; the grades the moves must have; planted bad families (a head no
// rank holds, a gap between PP stages) refused for missing positions; a table row naming a layout the specs
// lack is an error, never skipped; ownership mutants of every shipped family are killed; the certificate
// records the rows and its check notices a changed one.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "certificate/certificate.hpp"
#include "certificate/group_rows.hpp"
#include "certificate/ownership_mutation.hpp"
#include "spec/catalog.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;
namespace fs = std::filesystem;

namespace {

spec::CacheShape small_cache() {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache("small").string());
}

std::string describe(const certificate::GroupRow& r) {
  return certificate::group_row_key(r.spec) + ": " + prove::grade_name(r.grade) + " [" + prove::info(r.reason).code +
         "]; on " + r.cross_check_cache + " prover " + prove::grade_name(r.small_grade) + " [" +
         prove::info(r.small_reason).code + "], oracle " + prove::grade_name(r.cross.grade) + " [" +
         prove::info(r.cross.reason).code + "] " + r.cross.not_checked + " " + r.error;
}

// A specs directory: the shipped caches and engines, plus planted families edited from shipped JSON.
fs::path specs_with(const test::TempDir& dir) {
  fs::path to = dir.path() / "specs";
  fs::copy(KVLAYOUT_SPECS_DIR, to, fs::copy_options::recursive);
  return to;
}

void plant(const fs::path& specs, const std::string& from, const std::string& name,
           const std::function<void(spec::Json&)>& edit) {
  spec::Json d = spec::read_json_file((specs / "engines" / (from + ".json")).string());
  d["name"] = name;
  edit(d);
  std::ofstream(specs / "engines" / (name + ".json")) << d.dump(2);
}

certificate::GroupRows run(const spec::Catalog& catalog, const std::vector<certificate::GroupRowSpec>& table) {
  return certificate::run_group_rows(catalog, spec::load_layouts(catalog), table, small_cache(), {}, 2);
}

}  // namespace

TEST_CASE("every group row: proven on its model, the group oracle agreeing with the proof on a small shape",
          "[certificate][group-rows]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const auto& table = certificate::group_row_table();
  std::set<std::string> keys;
  for (const auto& s : table) keys.insert(certificate::group_row_key(s));
  CHECK(keys.size() == table.size());
  auto rows = run(catalog, table);
  REQUIRE(rows.rows.size() == table.size());
  for (const auto& r : rows.rows) {
    INFO(describe(r));
    CHECK(r.error.empty());
    CHECK(r.cross_checked());
    CHECK(r.agree());
    CHECK(r.cross.positions_checked > 0);
    CHECK_FALSE(r.assignment.empty());
    // An SGLang source pool has padding (the dummy page 0); every other move is byte for byte: hetero TP,
    // whole -> group, group -> whole, replicated heads, PP stages, MLA replicas.
    CHECK(r.grade == (r.spec.source == "sglang-mha-tp" ? prove::Grade::ExactToken : prove::Grade::ExactByte));
  }
  // Replicated heads are cross-checked with the model's 2 KV heads, uneven stages on 3 or 5 layers.
  std::set<std::string> shapes;
  for (const auto& r : rows.rows) shapes.insert(r.cross_check_cache);
  CHECK(shapes.count("small[num_kv_heads=2]"));
  CHECK(shapes.count("small[num_layers=3]"));
  REQUIRE(rows.caches.count("small[num_kv_heads=2]"));
  CHECK(rows.caches.at("small[num_kv_heads=2]").params.at("num_kv_heads") == 2);
}

TEST_CASE("group rows: a family leaving a head to no rank, and a gap between PP stages, are missing positions",
          "[certificate][group-rows]") {
  test::TempDir dir;
  fs::path specs = specs_with(dir);
  plant(specs, "vllm-flash-nhd-tp", "tp-last-head-unowned", [](spec::Json& d) {
    d["holds"] = "head >= first_head && head < first_head + heads_per_rank && head < num_kv_heads - 1";
  });
  plant(specs, "vllm-flash-nhd-pp", "pp-gap", [](spec::Json& d) {
    d["params"]["end_layer"] = "(" + d["params"]["end_layer"].get<std::string>() + ") - max(0, 1 - pp_rank)";
  });
  plant(specs, "vllm-flash-nhd-pp", "pp-overlap", [](spec::Json& d) {
    d["params"]["first_layer"] = "(" + d["params"]["first_layer"].get<std::string>() + ") - min(pp_rank, 1)";
  });
  spec::Catalog catalog(specs);
  using Spec = certificate::GroupRowSpec;
  const std::vector<Spec> table = {
      Spec{"tp-last-head-unowned", {{"tp_size", 2}}, "vllm-flash-nhd-tp", {{"tp_size", 4}}, "llama-3.1-70b", {}},
      Spec{"pp-gap", {{"pp_size", 2}}, "vllm-flash-nhd", {}, "llama-3.1-70b", {{"num_layers", 3}}},
      Spec{"pp-overlap", {{"pp_size", 2}}, "vllm-flash-nhd", {}, "llama-3.1-70b", {{"num_layers", 3}}},
      Spec{"vllm-flash-nhd", {}, "pp-overlap", {{"pp_size", 2}}, "llama-3.1-70b", {{"num_layers", 3}}},
      Spec{"no-such-family", {}, "vllm-flash-nhd", {}, "llama-3.1-70b", {}},
  };
  auto rows = run(catalog, table).rows;
  REQUIRE(rows.size() == table.size());
  for (std::size_t i = 0; i < 4; ++i) {
    INFO(describe(rows[i]));
    CHECK(rows[i].error.empty());
    CHECK(rows[i].cross_checked());
    CHECK(rows[i].agree());
  }
  // The last head (7 of 8) is held by target rank 3 (4 ranks: rank 3 holds heads 6 and 7), by no source rank.
  CHECK(rows[0].grade == prove::Grade::Refused);
  CHECK(rows[0].reason == prove::Reason::MissingPositions);
  REQUIRE(rows[0].counterexample.is_object());
  CHECK_THAT(rows[0].counterexample.value("summary", ""), Catch::Contains("target rank 3"));
  CHECK(rows[0].cross.reason == prove::Reason::MissingPositions);
  // A gap: some layer no stage holds. An overlap: both stages hold a layer (replicas), still exact.
  CHECK(rows[1].grade == prove::Grade::Refused);
  CHECK(rows[1].reason == prove::Reason::MissingPositions);
  CHECK(rows[2].grade == prove::Grade::ExactByte);
  CHECK(rows[3].grade == prove::Grade::ExactByte);
  // A name the table lists that the specs lack: an error of the table, not a skipped row.
  CHECK_THAT(rows[4].error, Catch::Contains("no-such-family") && Catch::Contains("do not declare"));
  CHECK(certificate::count_group_rows(rows).errors == 1);
}

TEST_CASE("ownership mutants of every shipped family are killed by group grades (modulo-owner, owner-off-by-one)",
          "[certificate][group-rows][mutation]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const spec::CacheShape small = small_cache();
  std::map<std::string, std::size_t> killed;  // per kind
  std::size_t families = 0;
  for (const auto& l : spec::load_layouts(catalog)) {
    if (!spec::is_family(*l) || !l->holds) continue;
    ++families;
    const certificate::OwnershipBaseline baseline = certificate::ownership_baseline(l, small, {});
    CHECK_FALSE(baseline.moves.empty());
    for (const auto& m : certificate::ownership_mutants(*l)) {
      auto outcome = certificate::judge_ownership_mutant(baseline, m, small, {});
      INFO(m.layout->name << " (" << m.description << "): " << outcome.verdict << ": " << outcome.detail);
      CHECK(outcome.verdict == "killed");
      CHECK(outcome.caught_by == "group grade");
      CHECK(m.layout->holds->text != l->holds->text);
      if (outcome.verdict == "killed") ++killed[m.kind];
    }
  }
  CHECK(families >= 4);
  for (const auto& kind : certificate::ownership_mutation_kinds()) {
    INFO(kind);
    CHECK(killed[kind] >= 2);
  }
  // The modulo-owner mutant of vllm-flash-nhd-tp maps ranks to heads by tp_rank % replicas.
  auto tp = spec::load_layout(catalog.find_layout("vllm-flash-nhd-tp").string());
  bool modulo = false;
  for (const auto& m : certificate::ownership_mutants(*tp))
    modulo = modulo || (m.kind == "modulo-owner" && m.layout->holds->text.find("tp_rank % ") != std::string::npos);
  CHECK(modulo);
}

TEST_CASE("the certificate records group rows, and its check notices a changed one", "[certificate][group-rows]") {
  certificate::Matrix m;
  certificate::GroupRow r;
  r.spec = certificate::group_row_table().front();
  r.grade = prove::Grade::ExactByte;
  r.reason = prove::Reason::Exact;
  r.small_grade = prove::Grade::ExactByte;
  r.small_reason = prove::Reason::Exact;
  r.cross_check_cache = "small";
  r.cross.checked = true;
  r.cross.grade = prove::Grade::ExactByte;
  r.cross.reason = prove::Reason::Exact;
  m.group_rows = {r};
  m.group_rows_run = true;
  m.cross_check_cache = "small";
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  certificate::MatrixOptions options;
  spec::Json cert = certificate::certificate_json(catalog, m, certificate::Controls{}, options);
  REQUIRE(cert["group_rows"].size() == 1);
  const spec::Json& row = cert["group_rows"][0];
  for (const char* field : {"source", "source_params", "target", "target_params", "cache", "grade", "reason", "assignment",
                            "prove_ms", "cross_check"})
    CHECK(row.contains(field));
  CHECK(row["source_params"]["tp_size"] == 1);
  CHECK(cert["counts"]["group_rows"]["rows"] == 1);
  CHECK(cert["group_rows_table"] == true);
  CHECK_THAT(cert["headline"].get<std::string>(), Catch::Contains("1 group rows"));
  CHECK(certificate::compare_certificates(cert, cert).empty());
  spec::Json changed = cert;
  changed["group_rows"][0]["grade"] = "SUBSET";
  auto diff = certificate::compare_certificates(changed, cert);
  REQUIRE_FALSE(diff.empty());
  CHECK_THAT(diff.front(), Catch::Contains("group row vllm-flash-nhd-tp (tp_size=1) -> vllm-flash-nhd-tp (tp_size=2)"));
  CHECK(certificate::options_from_certificate(cert, "c.json").group_rows);
  changed["group_rows_table"] = false;
  CHECK_FALSE(certificate::options_from_certificate(changed, "c.json").group_rows);
}

// The campaign on a reduced specs directory: a planted disagreement is caught, the certificate replays,
// a one-character change to a spec is caught, and the mutation generator covers every listed edit kind.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "certificate/certificate.hpp"
#include "certificate/mutation.hpp"
#include "prove/proof.hpp"
#include "spec/catalog.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;
namespace fs = std::filesystem;

namespace {

// A specs directory with a few shipped layouts and the small cache.
void copy_specs(const test::TempDir& dir, std::initializer_list<const char*> layouts) {
  fs::path from = KVLAYOUT_SPECS_DIR;
  fs::create_directories(dir.path() / "specs" / "caches");
  fs::create_directories(dir.path() / "specs" / "engines");
  fs::copy_file(from / "caches" / "small.json", dir.path() / "specs" / "caches" / "small.json");
  for (const char* l : layouts) fs::copy_file(from / "engines" / (std::string(l) + ".json"), dir.path() / "specs" / "engines" / (std::string(l) + ".json"));
}

}  // namespace

TEST_CASE("a planted disagreement (the prover's small-cache grade overridden) is caught as DISAGREE", "[certificate][matrix]") {
  test::TempDir dir;
  copy_specs(dir, {"vllm-flash-nhd", "vllm-flash-hnd", "vllm-flash-nhd-tp", "vllm-flash-nhd-tp2-r0"});
  spec::Catalog catalog(dir.path() / "specs");
  certificate::MatrixOptions options;
  options.group_rows = false;  // a reduced specs directory: without the group-row table's families and models
  options.cache = "small";
  auto clean = certificate::run_matrix(catalog, options);
  CHECK(clean.rows.size() == 16);
  CHECK(clean.disagreements() == 0);
  options.small_grade_override = [](const std::string& s, const std::string& t) -> std::optional<prove::Grade> {
    if (s == "vllm-flash-nhd" && t == "vllm-flash-hnd") return prove::Grade::ExactByte;  // the truth: EXACT_TOKEN
    return std::nullopt;
  };
  auto planted = certificate::run_matrix(catalog, options);
  CHECK(planted.disagreements() == 1);
  for (const auto& r : planted.rows) CHECK(r.agree() == !(r.source == "vllm-flash-nhd" && r.target == "vllm-flash-hnd"));
}

TEST_CASE("kvlayout certificate check replays a certificate and fails on a one-character change to a spec", "[certificate][cli]") {
  test::TempDir dir;
  copy_specs(dir, {"vllm-flash-nhd", "vllm-flash-nhd-tp", "vllm-flash-nhd-tp2-r0"});  // the instance beside its family
  std::string specs = (dir.path() / "specs").string(), cert = (dir.path() / "cert.json").string();
  auto made = test::run_kvlayout("matrix --specs '" + specs + "' --cache small --jobs 2 --no-group-rows --certificate '" + cert + "'");
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);
  spec::Json c = spec::read_json_file(cert);
  for (const char* field : {"tool", "commit", "caches", "spec_hashes", "counts", "equivalence_classes", "rows", "controls"})
    CHECK(c.contains(field));
  CHECK(c["controls"].contains("mutation_score"));
  CHECK(c["spec_hashes"].size() == 4);
  CHECK(c["group_rows_table"] == false);
  CHECK(c["group_rows"].empty());
  for (const auto& r : c["rows"])
    for (const char* field : {"source", "target", "grade", "reason", "unblocked_by", "prove_ms", "positions_checked", "counterexample"})
      CHECK(r.contains(field));
  auto ok = test::run_kvlayout("certificate check '" + cert + "' --specs '" + specs + "' --jobs 2");
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("is up to date"));

  // One character: the TP shard's rank 0 becomes rank 1.
  fs::path shard = dir.path() / "specs" / "engines" / "vllm-flash-nhd-tp2-r0.json";
  std::ifstream in(shard);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  auto at = text.find("\"tp_rank\": 0");
  REQUIRE(at != std::string::npos);
  text[at + 11] = '1';  // the digit after `"tp_rank": `
  std::ofstream(shard) << text;
  auto changed = test::run_kvlayout("certificate check '" + cert + "' --specs '" + specs + "' --jobs 2");
  INFO(changed.err);
  CHECK(changed.exit_code == 1);
  CHECK_THAT(changed.out, Catch::Contains("spec specs/engines/vllm-flash-nhd-tp2-r0.json changed"));
  CHECK_THAT(changed.out, Catch::Contains("regenerate it with"));
}

TEST_CASE("certificate check --sample N compares every N-th row and mutant and only those", "[certificate][cli]") {
  test::TempDir dir;
  copy_specs(dir, {"vllm-flash-nhd", "vllm-flash-hnd", "sglang-mha"});
  std::string specs = (dir.path() / "specs").string(), cert = (dir.path() / "cert.json").string();
  auto made = test::run_kvlayout("matrix --specs '" + specs + "' --cache small --jobs 2 --no-group-rows --certificate '" + cert + "'");
  REQUIRE(made.exit_code == 0);
  const spec::Json original = spec::read_json_file(cert);
  REQUIRE(original["rows"].size() == 9);
  const std::size_t mutants = original["controls"]["mutation"]["mutants"].size();
  auto check = [&](const spec::Json& doc, const std::string& flags) {
    std::ofstream(cert) << doc.dump(2);
    return test::run_kvlayout("certificate check '" + cert + "' --specs '" + specs + "' --jobs 2 " + flags);
  };
  auto ok = check(original, "--sample 2");
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("the sample of 1 in 2 agrees: 5 rows, 0 group rows and " +
                                     std::to_string((mutants + 1) / 2) + " mutants"));
  // A row in the sample (row 0) with a wrong grade is caught; one outside it (row 1) is the sample's blind
  // spot, which the whole replay (the plain suite) catches.
  spec::Json in_sample = original;
  in_sample["rows"][0]["grade"] = "NOT_EXACT";
  auto caught = check(in_sample, "--sample 2");
  CHECK(caught.exit_code == 1);
  CHECK_THAT(caught.out, Catch::Contains("of the sample of 1 in 2") && Catch::Contains("grade \"NOT_EXACT\" -> "));
  spec::Json outside = original;
  outside["rows"][1]["grade"] = "NOT_EXACT";
  CHECK(check(outside, "--sample 2").exit_code == 0);
  CHECK(check(outside, "").exit_code == 1);
  // Whole-grid facts are a whole replay's to judge.
  spec::Json counts = original;
  counts["counts"]["rows"] = 10;
  CHECK(check(counts, "--sample 3").exit_code == 0);
  CHECK(check(counts, "").exit_code == 1);
  // A mutant in the sample with a wrong verdict is caught.
  spec::Json mutant = original;
  mutant["controls"]["mutation"]["mutants"][0]["verdict"] = "survived";
  CHECK(check(mutant, "--sample 2").exit_code == 1);
  auto bad = check(original, "--sample 0");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("a positive integer"));
}

TEST_CASE("the mutation generator produces every listed edit kind, each a real edit", "[certificate][mutation]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  std::set<std::string> kinds;
  for (const char* name : {"vllm-flash-nhd-tp2-r0", "vllm-flash-hnd", "vllm-paged-legacy", "fictional-engine-9000"}) {
    auto original = spec::load_layout(catalog.find_layout(name).string());
    for (const auto& m : certificate::mutants(*original)) {
      kinds.insert(m.kind);
      INFO(m.layout->name << ": " << m.description);
      CHECK(m.layout->name != original->name);
      CHECK_FALSE(m.description.empty());
    }
  }
  for (const auto& k : certificate::mutation_kinds()) {
    INFO(k);
    CHECK(kinds.count(k) == 1);
  }
}

TEST_CASE("mutants: an off-by-one extent, a dropped modulo and a swapped axis are each caught", "[certificate][mutation]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto original = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  auto small = spec::load_cache(catalog.find_cache("small").string());
  int seen = 0;
  for (const auto& m : certificate::mutants(*original)) {
    if (m.kind != "drop-mod" && m.kind != "swap-index" && m.kind != "shift-index") continue;
    auto p = prove::prove(original, m.layout, small);
    INFO(m.description << ": " << prove::grade_name(p.grade));
    CHECK_FALSE(prove::is_exact(p.grade));
    ++seen;
  }
  CHECK(seen >= 9);
}

// Honest cross-check coverage: every row is cross-checked on a shape where both layouts fit (small, or a
// shape derived for the pair), or reported as not cross-checked with the reason and counted; a row's
// internal error is that row's failure, never the run's.
#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>

#include "certificate/certificate.hpp"
#include "certificate/cross_check_plan.hpp"
#include "certificate/table.hpp"
#include "spec/catalog.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;
namespace fs = std::filesystem;

namespace {

// A specs directory with the given shipped files ("engines/vllm-flash-nhd", "caches/small", ...).
fs::path copy_specs(const test::TempDir& dir, std::initializer_list<const char*> files) {
  fs::path from = KVLAYOUT_SPECS_DIR, to = dir.path() / "specs";
  for (const char* f : files) {
    fs::create_directories((to / f).parent_path());
    fs::copy_file(from / (std::string(f) + ".json"), to / (std::string(f) + ".json"));
  }
  return to;
}

// vllm-flash-nhd with an explicit dim stride of 2^40: valid, and ~6.6e13 bytes on small (finding 12).
void write_huge_alloc(const fs::path& specs) {
  std::ifstream in(specs / "engines" / "vllm-flash-nhd.json");
  spec::Json d = spec::Json::parse(in);
  d["name"] = "huge-alloc";
  d["tensors"][0]["strides"] = spec::Json::array({"num_blocks * block_size * num_kv_heads * head_size",
                                                  "block_size * num_kv_heads * head_size", "num_kv_heads * head_size",
                                                  "head_size", 1099511627776});
  std::ofstream(specs / "engines" / "huge-alloc.json") << d.dump(2);
}

const certificate::Row& row(const certificate::Matrix& m, const std::string& s, const std::string& t) {
  for (const auto& r : m.rows)
    if (r.source == s && r.target == t) return r;
  throw std::logic_error("no row " + s + " -> " + t);
}

}  // namespace

TEST_CASE("a layout that does not fit small is cross-checked on a shape derived for its pairs", "[certificate][coverage]") {
  test::TempDir dir;
  fs::path specs = copy_specs(dir, {"engines/vllm-flash-nhd", "controls/broken-nofit", "caches/small", "caches/llama-3.1-70b"});
  spec::Catalog catalog(specs);
  certificate::MatrixOptions options;
  options.group_rows = false;  // a reduced specs directory: without the group-row table's families and models
  options.jobs = 2;
  auto m = certificate::run_matrix(catalog, options);
  REQUIRE(m.rows.size() == 4);
  CHECK(m.errors() == 0);
  CHECK(m.disagreements() == 0);
  CHECK(m.not_cross_checked() == 0);
  CHECK(m.cross_checked_on() == std::map<std::string, std::size_t>{{"small", 1}, {"small[head_size=128]", 3}});
  CHECK(row(m, "vllm-flash-nhd", "vllm-flash-nhd").cross_check_cache == "small");
  for (const auto& r : m.rows) {
    INFO(r.source << " -> " << r.target);
    CHECK(r.cross_checked());
    CHECK(r.agree());
    if (r.source != "broken-nofit" && r.target != "broken-nofit") continue;
    CHECK(r.cross_check_cache == "small[head_size=128]");
    // Both sides located under three table choices, at head_size 128.
    CHECK(r.cross.positions_checked == 2 * 3 * (2 * 2 * 67 * 4 * 128));
    CHECK(r.cross.grade == r.small_grade);
  }
  REQUIRE(m.caches.count("small[head_size=128]"));
  CHECK(m.caches.at("small[head_size=128]").params.at("num_tokens") == 67);

  spec::Json cert = certificate::certificate_json(catalog, m, certificate::Controls{}, options);
  CHECK(cert["caches"]["cross_check_derived"] == spec::Json::array({"small[head_size=128]"}));
  CHECK(cert["caches"]["shapes"].contains("small[head_size=128]"));
  CHECK(cert["counts"]["not_cross_checked"] == 0);
  CHECK(cert["counts"]["cross_checked_on"]["small[head_size=128]"] == 3);
  CHECK_THAT(cert["headline"].get<std::string>(),
             Catch::Contains("every row cross-checked by enumeration (1 on small, 3 on small[head_size=128]), 0 not cross-checked"));
  for (const auto& r : cert["rows"]) {
    CHECK(r["cross_check"]["checked"] == true);
    CHECK(r["cross_check"]["not_cross_checked"].is_null());
  }

  // certificate check compares where, and whether, each row was cross-checked.
  spec::Json recorded = cert;
  for (auto& r : recorded["rows"])
    if (r["source"] == "broken-nofit" && r["target"] == "vllm-flash-nhd") r["cross_check"]["cache"] = "small";
  recorded["counts"]["not_cross_checked"] = 1;
  auto diff = certificate::compare_certificates(recorded, cert);
  std::string all;
  for (const auto& d : diff) all += d + "\n";
  CHECK_THAT(all, Catch::Contains("row broken-nofit -> vllm-flash-nhd: cross-check cache \"small\" -> \"small[head_size=128]\""));
  CHECK_THAT(all, Catch::Contains("counts differ"));
  CHECK(certificate::compare_certificates(cert, cert).empty());
}

TEST_CASE("a row that cannot be enumerated is reported as not cross-checked, counted, and never allocated",
          "[certificate][coverage]") {
  test::TempDir dir;
  fs::path specs = copy_specs(dir, {"engines/vllm-flash-nhd", "caches/small"});
  write_huge_alloc(specs);
  spec::Catalog catalog(specs);
  certificate::MatrixOptions options;
  options.group_rows = false;  // a reduced specs directory: without the group-row table's families and models
  options.cache = "small";
  options.jobs = 2;
  auto m = certificate::run_matrix(catalog, options);
  REQUIRE(m.rows.size() == 4);
  CHECK(m.errors() == 0);
  CHECK(m.disagreements() == 0);
  CHECK(m.not_cross_checked() == 3);
  CHECK(m.cross_checked_on() == std::map<std::string, std::size_t>{{"small", 1}});
  for (const auto& r : m.rows) {
    if (r.source != "huge-alloc" && r.target != "huge-alloc") continue;
    INFO(r.source << " -> " << r.target);
    CHECK(r.not_cross_checked());
    CHECK_FALSE(r.cross_checked());
    CHECK(r.cross.positions_checked == 0);
    CHECK_THAT(r.cross.not_checked, Catch::Contains("huge-alloc on small allocates"));
    CHECK(std::islower(static_cast<unsigned char>(certificate::cell(r))));  // proven, not cross-checked
  }
  spec::Json cert = certificate::certificate_json(catalog, m, certificate::Controls{}, options);
  CHECK(cert["counts"]["not_cross_checked"] == 3);
  CHECK(cert["counts"]["positions_checked"] == row(m, "vllm-flash-nhd", "vllm-flash-nhd").cross.positions_checked);
  CHECK_THAT(cert["headline"].get<std::string>(),
             Catch::Contains("1 of 4 rows cross-checked by enumeration (1 on small), 3 not cross-checked"));
  CHECK_THAT(cert["headline"].get<std::string>(), !Catch::Contains("every row"));
  for (const auto& r : cert["rows"]) {
    if (r["source"] != "huge-alloc" && r["target"] != "huge-alloc") continue;
    CHECK(r["positions_checked"] == 0);
    CHECK(r["cross_check"]["checked"] == false);
    CHECK(r["cross_check"]["grade"].is_null());
    CHECK(r["cross_check"]["agree"].is_null());
    CHECK_THAT(r["cross_check"]["not_cross_checked"].get<std::string>(), Catch::Contains("over the enumeration limit"));
  }

  // Finding 12: the CLI lists the rows and exits 0 (the layout is valid: not 2; nothing crashed: not 4).
  auto run = test::run_kvlayout("matrix --specs '" + specs.string() + "' --cache small --cross-check small --jobs 1 --no-group-rows");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("NOT CROSS-CHECKED huge-alloc -> huge-alloc: huge-alloc on small allocates"));
  CHECK_THAT(run.out, Catch::Contains("1 rows cross-checked by enumeration (1 on small), 3 not cross-checked"));
}

TEST_CASE("an internal error in one row (a std::logic_error, as prove/model.cpp throws) is that row's failure",
          "[certificate][coverage]") {
  test::TempDir dir;
  fs::path specs = copy_specs(dir, {"engines/vllm-flash-nhd", "engines/vllm-flash-hnd", "caches/small"});
  spec::Catalog catalog(specs);
  certificate::MatrixOptions options;
  options.group_rows = false;  // a reduced specs directory: without the group-row table's families and models
  options.cache = "small";
  options.jobs = 2;
  // The override runs inside the row, between the proof on the cross-check shape and the cross-check.
  options.small_grade_override = [](const std::string& s, const std::string& t) -> std::optional<prove::Grade> {
    if (s == "vllm-flash-hnd" && t == "vllm-flash-nhd") throw std::logic_error("model reads two values from one table entry");
    if (s == "vllm-flash-nhd" && t == "vllm-flash-hnd") throw std::length_error("cannot create std::vector larger than max_size()");
    return std::nullopt;
  };
  certificate::Matrix m;
  REQUIRE_NOTHROW(m = certificate::run_matrix(catalog, options));
  CHECK(m.errors() == 2);
  CHECK_THAT(row(m, "vllm-flash-hnd", "vllm-flash-nhd").error,
             Catch::Equals("prove on small: model reads two values from one table entry"));
  CHECK_THAT(row(m, "vllm-flash-nhd", "vllm-flash-hnd").error, Catch::Contains("larger than max_size"));
  CHECK(certificate::cell(row(m, "vllm-flash-hnd", "vllm-flash-nhd")) == '!');
  CHECK_FALSE(row(m, "vllm-flash-hnd", "vllm-flash-nhd").not_cross_checked());  // an error, not a coverage gap
  CHECK(row(m, "vllm-flash-nhd", "vllm-flash-nhd").error.empty());
  CHECK(row(m, "vllm-flash-nhd", "vllm-flash-nhd").cross_checked());
}

TEST_CASE("a cross-check plan for a sample enumerates derived shapes for the rows it holds only", "[certificate][coverage]") {
  test::TempDir dir;
  fs::path specs = copy_specs(dir, {"engines/vllm-flash-nhd", "controls/broken-nofit", "caches/small", "caches/llama-3.1-70b"});
  spec::Catalog catalog(specs);
  const auto layouts = spec::load_layouts(catalog);
  REQUIRE(layouts.size() == 2);
  const spec::CacheShape small = spec::load_cache(catalog.find_cache("small").string());
  const spec::CacheShape proof = spec::load_cache(catalog.find_cache("llama-3.1-70b").string());
  const std::size_t fits = layouts[0]->name == "vllm-flash-nhd" ? 0 : 1, nofit = 1 - fits;
  auto plan_for = [&](const std::function<bool(std::size_t)>& wanted) {
    return certificate::plan_cross_checks(layouts, small, [&](std::size_t, std::size_t) -> const spec::CacheShape& { return proof; },
                                          wanted, 2);
  };
  // Control: every row wanted, so broken-nofit's rows need a derived shape with both layouts on it.
  const auto whole = plan_for([](std::size_t) { return true; });
  CHECK(whole.derived.size() == 1);
  CHECK(whole.enumerated.size() == 4);  // both on small, both on the derived shape
  CHECK(whole.shape[nofit * 2 + fits] == "small[head_size=128]");
  // Only the row that fits small: nothing derived, nothing enumerated beyond small, no word on other rows.
  const std::size_t kept = fits * 2 + fits;
  const auto sampled = plan_for([&](std::size_t row) { return row == kept; });
  CHECK(sampled.derived.empty());
  CHECK(sampled.enumerated.size() == 2);
  CHECK(sampled.shape[kept] == "small");
  for (std::size_t row = 0; row < 4; ++row) {
    if (row == kept) continue;
    CHECK(sampled.shape[row].empty());
    CHECK(sampled.why_not[row].empty());
  }
  // One derived row wanted: its shape and both its layouts there, and only that.
  const auto one = plan_for([&](std::size_t row) { return row == nofit * 2 + fits; });
  CHECK(one.derived.size() == 1);
  CHECK(one.enumerated.size() == 4);
  CHECK(one.shape[nofit * 2 + nofit].empty());
}

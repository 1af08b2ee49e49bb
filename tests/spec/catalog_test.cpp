#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "spec/catalog.hpp"
#include "spec/error.hpp"
#include "spec/layout.hpp"

namespace {
const char* kEngines[] = {
    "vllm-flash-nhd", "vllm-flash-hnd", "vllm-flashinfer-nhd", "vllm-flashinfer-hnd", "vllm-packed-nhd",
    "vllm-packed-hnd", "vllm-paged-legacy", "vllm-mla", "vllm-flash-nhd-fp8", "vllm-flash-nhd-tp2-r0",
    "vllm-flash-nhd-tp2-r1", "sglang-mha", "sglang-mla", "sglang-host-layer-first", "sglang-host-page-first",
    "sglang-host-page-first-direct", "sglang-host-page-head", "trtllm-pool", "flashinfer-nhd", "flashinfer-hnd",
    "hf-dynamic", "lmcache-2ltd", "lmcache-mla", "llamacpp", "llamacpp-vtrans", "dynamo-universal",
    // rank families (issue 10)
    "vllm-flash-nhd-tp", "vllm-flash-nhd-pp", "vllm-flash-nhd-tp-pp", "sglang-mha-tp", "trtllm-pool-tp", "vllm-mla-tp",
    // current releases, pinned by package version (issue 14)
    "vllm033-lbhnc", "vllm033-lbnhc", "vllm033-lhbnc", "vllm033-blhnc", "vllm033-blnhc", "vllm033-bhlnc",
    "vllm033-mla-lbnhc", "vllm033-mla-blnhc", "sglang0523-mha", "sglang0523-mha-hnd", "sglang0523-mha-tp",
    "sglang0523-mla", "sglang0523-host-layer-first", "sglang0523-host-page-first", "sglang0523-host-page-first-direct",
    "sglang0523-host-page-head", "sglang0523-host-mla-layer-first", "sglang0523-host-mla-page-first",
    "sglang0523-host-mla-page-first-direct", "lmcache056-2ltd", "lmcache056-mla", "lmcache056-packed", "lmcache056-t2d",
    "lmcache056-2td", "lmcache056-mla-layerwise", "hf520-dynamic", "flashinfer072-nhd", "flashinfer072-hnd"};
const char* kControls[] = {"fictional-engine-9000", "broken-collide", "broken-oob", "broken-nofit"};
}  // namespace

TEST_CASE("the shipped specs hold exactly the named declarations, each engine cited", "[spec][catalog]") {
  kvlayout::spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  std::set<std::string> found;
  for (const auto& f : catalog.layout_files()) {
    auto l = kvlayout::spec::load_layout(f.string());
    found.insert(l->name);
    bool in_controls = f.parent_path().filename() == "controls";
    INFO(l->name);
    CHECK(l->control == in_controls);
    if (!l->control) {
      REQUIRE(l->cite.has_value());
      CHECK_FALSE(l->cite->repo.empty());
      CHECK_FALSE(l->cite->path.empty());
      CHECK_FALSE(l->cite->symbol.empty());
      CHECK_FALSE((l->cite->commit.empty() && l->cite->version.empty()));
    }
    // An observed declaration names the conformance test that holds it to account; that test must exist.
    if (l->observed) CHECK(std::filesystem::is_regular_file(std::filesystem::path(KVLAYOUT_SOURCE_DIR) / l->observed->test));
  }
  std::set<std::string> expected(std::begin(kEngines), std::end(kEngines));
  expected.insert(std::begin(kControls), std::end(kControls));
  CHECK(found == expected);
}

TEST_CASE("layouts and caches are found by name or by path and unknown names list the known ones", "[spec][catalog]") {
  kvlayout::spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto by_name = catalog.find_layout("vllm-flash-nhd");
  CHECK(by_name.filename() == "vllm-flash-nhd.json");
  CHECK(catalog.find_layout(by_name.string()) == by_name);
  CHECK(catalog.find_cache("small").filename() == "small.json");
  CHECK_THROWS_WITH(catalog.find_layout("vllm-flash-nhdd"),
                    Catch::Contains("no layout named \"vllm-flash-nhdd\"") && Catch::Contains("vllm-flash-nhd,"));
  CHECK_THROWS_WITH(catalog.find_cache("tiny"), Catch::Contains("no cache shape named \"tiny\""));
  CHECK_THROWS_WITH(catalog.find_layout("/no/such/file.json"), Catch::Contains("no such file"));
  CHECK_THROWS_AS(kvlayout::spec::Catalog("/no/such/dir"), kvlayout::spec::SpecError);
}

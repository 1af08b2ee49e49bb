// The geometry check: declarations of shipped engines against dumps of the tensors a connector sees.
// The planted defects of the issue (strides from a padded page, a split-half allocation advertised
// through a blocks-first shape, a declared head size that is not the tensor's), each graded
// GEOMETRY_MISMATCH naming the axis or field with both values, and each refuted by its correct dump.
// The dumps in tests/data/check/geometry/ are written by hand from the engines' shapes, not generated
// from the declarations they are checked against.
#include <catch2/catch.hpp>

#include "check/geometry.hpp"
#include "layout/layout_fixture.hpp"
#include "layout/view_algebra.hpp"

using kvlayout::check::check_geometry;
using kvlayout::check::load_tensor_dump;
using kvlayout::check::TensorDump;
using kvlayout::check::Verdict;
using kvlayout::test::bind_named;
using Json = nlohmann::json;

namespace {

std::string data(const std::string& name) {
  return std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/geometry/" + name;
}

kvlayout::check::CheckResult check(const std::string& layout, const std::string& dump_file,
                                   const kvlayout::layout::Overrides& overrides = {}) {
  auto bound = bind_named(layout, "small", overrides);
  REQUIRE(bound.fits());
  return check_geometry(bound, load_tensor_dump(data(dump_file)));
}

}  // namespace

TEST_CASE("geometry: the correct dump of each shipped layout is OK", "[check][geometry]") {
  struct Case {
    const char* layout;
    const char* dump;
    kvlayout::layout::Overrides overrides;
  };
  const std::vector<Case> cases = {
      {"vllm-flash-nhd", "flash-nhd-small.json", {}},
      {"vllm-flashinfer-nhd", "flashinfer-nhd-small.json", {}},
      {"sglang-mha", "sglang-mha-small.json", {}},
      {"vllm-paged-legacy", "paged-legacy-small.json", {}},    // two views of one allocation per layer
      {"vllm-flash-nhd-fp8", "flash-nhd-fp8-small.json", {}},  // fp8 values kept in uint8 tensors
      {"vllm-flash-nhd", "flash-nhd-small-head32.json", {{"head_size", 32}}},  // the head-size fix
  };
  for (const auto& c : cases) {
    INFO(c.layout << " against " << c.dump);
    auto r = check(c.layout, c.dump, c.overrides);
    CHECK(r.verdict == Verdict::Ok);
    CHECK(r.counterexample.is_null());
    REQUIRE(r.steps.size() == 1);
    CHECK(r.steps[0].name == "geometry");
    CHECK(r.steps[0].status == "proved");
  }
}

TEST_CASE("geometry: strides from a padded page are a mismatch on the page axis", "[check][geometry]") {
  auto r = check("vllm-flash-nhd", "flash-nhd-small-padded.json");
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["record"] == "/tensors/0");
  CHECK(r.counterexample["tensor"] == "kv_cache");
  CHECK(r.counterexample["instance"] == 0);
  CHECK(r.counterexample["field"] == "stride");
  CHECK(r.counterexample["axis"] == 1);
  CHECK(r.counterexample["axis_expr"] == "num_blocks");
  CHECK(r.counterexample["declared"] == 1024);
  CHECK(r.counterexample["observed"] == 1088);
  CHECK(r.counterexample["index"] == Json::array({0, 1, 0, 0, 0}));
  CHECK(r.counterexample["declared_element"] == 1024);
  CHECK(r.counterexample["observed_element"] == 1088);
  CHECK_THAT(r.message, Catch::Contains("stride of axis 1 (extent num_blocks): declared 1024, observed 1088"));
  CHECK(r.steps.at(0).status == "refuted");
  // The declared value is the one the view algebra gives: one step along the block axis.
  auto bound = bind_named("vllm-flash-nhd", "small");
  const auto& view = bound.tensors.at(0).views.at(0);
  std::vector<std::int64_t> index = {0, 1, 0, 0, 0};
  CHECK(*kvlayout::layout::element_offset(view, index) == 1024);
}

TEST_CASE("geometry: a split-half allocation advertised through a blocks-first shape", "[check][geometry]") {
  SECTION("K and V halves transposed to look blocks-first: the strides give it away") {
    auto r = check("vllm-flashinfer-nhd", "flashinfer-nhd-small-split-half.json");
    REQUIRE(r.verdict == Verdict::GeometryMismatch);
    CHECK(r.counterexample["field"] == "stride");
    CHECK(r.counterexample["axis"] == 1);  // the kv axis: 1024 declared, a half (5120) observed
    CHECK(r.counterexample["declared"] == 1024);
    CHECK(r.counterexample["observed"] == 5120);
    CHECK_THAT(r.details.at(1), Catch::Contains("stride of axis 0 (extent num_blocks): declared 2048, observed 1024"));
  }
  SECTION("k_buffer and v_buffer as the two halves of one allocation") {
    auto r = check("sglang-mha", "sglang-mha-small-split-half.json");
    REQUIRE(r.verdict == Verdict::GeometryMismatch);
    CHECK(r.counterexample["record"] == "/tensors/1");
    CHECK(r.counterexample["field"] == "storage_offset");
    CHECK(r.counterexample["declared"] == 0);
    CHECK(r.counterexample["observed"] == 4352);
    bool shared = false;
    for (const auto& d : r.details) shared = shared || d.find("share bytes [0x7f0000000000, 0x7f0000002200)") != std::string::npos;
    CHECK(shared);
  }
  SECTION("two layers handed one allocation: each record matches, the overlap does not") {
    auto r = check("sglang-mha", "sglang-mha-small-aliased-layers.json");
    REQUIRE(r.verdict == Verdict::GeometryMismatch);
    CHECK(r.details.size() == 1);
    CHECK(r.counterexample["field"] == "data_ptr");
    CHECK(r.counterexample["record"] == "/tensors/2");
    CHECK(r.counterexample["other_record"] == "/tensors/0");
    CHECK_THAT(r.message, Catch::Contains("k_buffer instance 0 (/tensors/0) and k_buffer instance 1 (/tensors/2) share bytes"));
  }
}

TEST_CASE("geometry: a declared head size that is not the tensor's", "[check][geometry]") {
  auto r = check("vllm-flash-nhd", "flash-nhd-small-head32.json");
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["field"] == "shape");
  CHECK(r.counterexample["axis"] == 4);
  CHECK(r.counterexample["axis_expr"] == "head_size");
  CHECK(r.counterexample["declared"] == 16);
  CHECK(r.counterexample["observed"] == 32);
  CHECK_THAT(r.message, Catch::Contains("--param head_size=32"));
}

TEST_CASE("geometry control: a correct dump with one stride changed fails", "[check][geometry]") {
  auto r = check("vllm-flash-nhd", "flash-nhd-small-stride-changed.json");
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["record"] == "/tensors/1");
  CHECK(r.counterexample["axis"] == 3);
  CHECK(r.counterexample["declared"] == 16);
  CHECK(r.counterexample["observed"] == 17);
}

TEST_CASE("geometry control: every single-field corruption of a correct dump fails", "[check][geometry]") {
  auto bound = bind_named("vllm-paged-legacy", "small");
  const TensorDump good = load_tensor_dump(data("paged-legacy-small.json"));
  REQUIRE(check_geometry(bound, good).verdict == Verdict::Ok);
  int corruptions = 0;
  auto expect_mismatch = [&](TensorDump bad, const std::string& what) {
    INFO(what);
    ++corruptions;
    CHECK(check_geometry(bound, bad).verdict == Verdict::GeometryMismatch);
  };
  for (std::size_t i = 0; i < good.records.size(); ++i) {
    for (std::size_t k = 0; k < good.records[i].shape.size(); ++k) {
      TensorDump bad = good;
      bad.records[i].shape[k] += 1;
      expect_mismatch(bad, "record " + std::to_string(i) + " extent " + std::to_string(k));
      if (good.records[i].shape[k] > 1) {
        bad = good;
        bad.records[i].stride[k] += 1;
        expect_mismatch(bad, "record " + std::to_string(i) + " stride " + std::to_string(k));
      }
    }
    TensorDump bad = good;
    bad.records[i].storage_offset += 8;
    expect_mismatch(bad, "storage_offset");
    bad = good;
    bad.records[i].nbytes -= 2;
    expect_mismatch(bad, "nbytes");
    bad = good;
    bad.records[i].storage_nbytes = *good.records[i].storage_nbytes - 2;
    expect_mismatch(bad, "storage_nbytes");
    bad = good;
    bad.records[i].dtype = "float16";
    expect_mismatch(bad, "dtype");
    bad = good;
    bad.records[i].data_ptr += 2;  // a view that moved: its allocation no longer starts with its sibling's
    expect_mismatch(bad, "data_ptr");
  }
  // Dropping one view of an instance is fine (a connector may register only the raw allocation); dropping
  // every record of an instance is not.
  TensorDump one_view = good;
  one_view.records.erase(one_view.records.begin() + 1);
  CHECK(check_geometry(bound, one_view).verdict == Verdict::Ok);
  TensorDump no_layer = good;
  no_layer.records.erase(no_layer.records.begin(), no_layer.records.begin() + 2);
  expect_mismatch(no_layer, "layer 0 missing");
  CHECK(corruptions > 40);
}

TEST_CASE("geometry: element types as torch and numpy store them", "[check][geometry]") {
  auto bf16 = bind_named("vllm-flash-nhd", "small");
  auto fp8 = bind_named("vllm-flash-nhd-fp8", "small");
  TensorDump dump = load_tensor_dump(data("flash-nhd-small.json"));
  auto with_dtype = [&](TensorDump d, const std::string& dtype) {
    for (auto& r : d.records) r.dtype = dtype;
    return d;
  };
  CHECK(check_geometry(bf16, with_dtype(dump, "bfloat16")).verdict == Verdict::Ok);
  CHECK(check_geometry(bf16, with_dtype(dump, "torch.bfloat16")).verdict == Verdict::Ok);
  CHECK(check_geometry(bf16, with_dtype(dump, "uint16")).verdict == Verdict::Ok);  // numpy's carrier of bf16
  auto fp16 = check_geometry(bf16, with_dtype(dump, "float16"));
  CHECK(fp16.verdict == Verdict::GeometryMismatch);
  CHECK(fp16.counterexample["field"] == "dtype");
  CHECK(check_geometry(bf16, with_dtype(dump, "int16")).verdict == Verdict::GeometryMismatch);
  CHECK(check_geometry(bf16, with_dtype(dump, "bfloat17")).verdict == Verdict::GeometryMismatch);  // built in memory

  TensorDump bytes = load_tensor_dump(data("flash-nhd-fp8-small.json"));
  CHECK(check_geometry(fp8, with_dtype(bytes, "float8_e4m3fn")).verdict == Verdict::Ok);
  CHECK(check_geometry(fp8, with_dtype(bytes, "uint8")).verdict == Verdict::Ok);
  CHECK(check_geometry(fp8, with_dtype(bytes, "float8_e5m2")).verdict == Verdict::GeometryMismatch);
  CHECK(check_geometry(fp8, with_dtype(bytes, "float8_e4m3fnuz")).verdict == Verdict::GeometryMismatch);
  auto size = check_geometry(bf16, bytes);
  CHECK(size.verdict == Verdict::GeometryMismatch);
  CHECK(size.counterexample["field"] == "element_size");
}

TEST_CASE("geometry: records naming what is not declared, and instances missing from the dump", "[check][geometry]") {
  auto bound = bind_named("vllm-flash-nhd", "small");
  const TensorDump good = load_tensor_dump(data("flash-nhd-small.json"));
  TensorDump bad = good;
  bad.records[1].tensor = "kv_caches";
  auto r = check_geometry(bound, bad);
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["field"] == "tensor");
  CHECK_THAT(r.message, Catch::Contains("tensor \"kv_caches\" is not declared (the declaration has kv_cache)"));
  // ... which also leaves instance 1 of kv_cache without a record.
  CHECK_THAT(r.details.back(), Catch::Contains("declared 2 instance(s) of kv_cache, the dump has 1 (missing: 1)"));

  bad = good;
  bad.records[1].instance = 2;
  r = check_geometry(bound, bad);
  CHECK(r.counterexample["field"] == "instance");
  CHECK_THAT(r.message, Catch::Contains("instance 2 of kv_cache is not declared (declared 2 instance(s), one per layer)"));

  bad = good;
  bad.records[0].view = "key_cache";
  r = check_geometry(bound, bad);
  CHECK(r.counterexample["field"] == "view");

  bad = good;
  bad.records.clear();
  r = check_geometry(bound, bad);
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["record"] == "/tensors");
  CHECK(r.counterexample["declared"] == 2);
  CHECK(r.counterexample["observed"] == 0);
}

TEST_CASE("geometry: a K/V-first tensor against a blocks-first declaration names the axis order", "[check][geometry]") {
  auto r = check("vllm-flashinfer-nhd", "flash-nhd-small.json");
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["field"] == "shape");
  CHECK(r.counterexample["axis"] == 0);
  CHECK_THAT(r.message, Catch::Contains("in another order [2, 5, 16, 4, 16]"));
  CHECK_THAT(r.message, !Catch::Contains("--param"));  // rebinding num_blocks would be the wrong advice
}

// The tensor dump as input: every malformed dump is bad input (SpecError, exit 2) naming the file, the
// JSON path, what was found and what was expected; `--tensors` / `--target-tensors` on prove and emit;
// and the check at production size (llama-3.1-70b: 80 per-layer allocations of 512 MiB).
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <sstream>

#include "check/geometry.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::check::check_geometry;
using kvlayout::check::load_tensor_dump;
using kvlayout::check::Verdict;
using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;
using kvlayout::test::TempDir;

namespace {

std::string data(const std::string& name) {
  return std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/geometry/" + name;
}

// A correct record of vllm-flash-nhd on `small`, for the bad-input cases to break one field at a time.
Json good_record() {
  return Json::parse(R"({"tensor": "kv_cache", "instance": 0, "shape": [2, 5, 16, 4, 16],
    "stride": [5120, 1024, 64, 16, 1], "storage_offset": 0, "dtype": "bfloat16", "element_size": 2,
    "nbytes": 20480, "data_ptr": "0x7f0000000000"})");
}

// llama-3.1-70b with vllm-flash-nhd: per layer (2, 8192, 16, 8, 128) bf16, 536870912 bytes, written by hand.
Json production_dump() {
  Json records = Json::array();
  for (int l = 0; l < 80; ++l) {
    std::ostringstream ptr;
    ptr << "0x" << std::hex << (0x7f0000000000ULL + static_cast<unsigned long long>(l) * 0x20000000ULL);
    records.push_back({{"tensor", "kv_cache"}, {"instance", l}, {"shape", {2, 8192, 16, 8, 128}},
                       {"stride", {134217728, 16384, 1024, 128, 1}}, {"storage_offset", 0}, {"dtype", "bfloat16"},
                       {"element_size", 2}, {"nbytes", 536870912}, {"storage_nbytes", 536870912}, {"data_ptr", ptr.str()}});
  }
  return {{"tensors", records}};
}

}  // namespace

TEST_CASE("tensor dump: malformed dumps are bad input naming file, path, found and expected", "[check][geometry]") {
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    const char* path;
    const char* found;
  };
  const std::vector<Case> cases = {
      {"missing field", [](Json& r) { r.erase("stride"); }, "/tensors/0", "no member \"stride\""},
      {"wrong type", [](Json& r) { r["shape"] = "2x5"; }, "/tensors/0/shape", "the string \"2x5\""},
      {"negative stride", [](Json& r) { r["stride"][1] = -1024; }, "/tensors/0/stride/1", "the integer -1024"},
      {"length mismatch", [](Json& r) { r["stride"].erase(4); }, "/tensors/0/stride", "an array of 4"},
      {"negative extent", [](Json& r) { r["shape"][0] = -2; }, "/tensors/0/shape/0", "the integer -2"},
      {"negative storage offset", [](Json& r) { r["storage_offset"] = -1; }, "/tensors/0/storage_offset", "-1"},
      {"data_ptr not hex", [](Json& r) { r["data_ptr"] = "7f0000000000"; }, "/tensors/0/data_ptr", "\"7f0000000000\""},
      {"data_ptr bad digit", [](Json& r) { r["data_ptr"] = "0x7g"; }, "/tensors/0/data_ptr", "\"0x7g\""},
      {"data_ptr too long", [](Json& r) { r["data_ptr"] = "0x10000000000000000"; }, "/tensors/0/data_ptr", "0x1000"},
      {"data_ptr negative", [](Json& r) { r["data_ptr"] = -5; }, "/tensors/0/data_ptr", "the integer -5"},
      {"data_ptr float", [](Json& r) { r["data_ptr"] = 1.5; }, "/tensors/0/data_ptr", "the number 1.5"},
      {"unknown dtype", [](Json& r) { r["dtype"] = "bfloat17"; }, "/tensors/0/dtype", "\"bfloat17\""},
      {"element size not the dtype's", [](Json& r) { r["element_size"] = 4; }, "/tensors/0/element_size", "the integer 4"},
      {"negative instance", [](Json& r) { r["instance"] = -1; }, "/tensors/0/instance", "the integer -1"},
      {"misspelt field", [](Json& r) { r["strides"] = r["stride"]; }, "/tensors/0/strides", "an unknown member"},
      {"huge nbytes", [](Json& r) { r["nbytes"] = 18446744073709551615ULL; }, "/tensors/0/nbytes", "64-bit"},
      {"data_ptr below its storage offset", [](Json& r) { r["storage_offset"] = 8; r["data_ptr"] = 4; },
       "/tensors/0/data_ptr", "below storage_offset 8"},
  };
  TempDir dir;
  auto bound = kvlayout::test::bind_named("vllm-flash-nhd", "small");
  for (const auto& c : cases) {
    INFO(c.what);
    Json record = good_record();
    c.edit(record);
    std::string file = dir.write(std::string("bad.json"), Json{{"tensors", {record}}}.dump());
    try {
      check_geometry(bound, load_tensor_dump(file));  // the last case is found by the check, not the loader
      FAIL("no SpecError");
    } catch (const kvlayout::spec::SpecError& e) {
      CHECK(e.file == file);
      CHECK(e.path == c.path);
      CHECK_THAT(e.found, Catch::Contains(c.found));
      CHECK(!e.expected.empty());
    }
  }
  // A duplicate (tensor, instance), and a document that is not a dump.
  std::string dup = dir.write("dup.json", Json{{"tensors", {good_record(), good_record()}}}.dump());
  try {
    load_tensor_dump(dup);
    FAIL("no SpecError");
  } catch (const kvlayout::spec::SpecError& e) {
    CHECK(e.path == "/tensors/1");
    CHECK_THAT(e.found, Catch::Contains("a second record of kv_cache instance 0 (the first is /tensors/0)"));
  }
  CHECK_THROWS_AS(load_tensor_dump(dir.write("list.json", "[]")), kvlayout::spec::SpecError);
  CHECK_THROWS_AS(load_tensor_dump(dir.write("syntax.json", "{\"tensors\": [")), kvlayout::spec::SpecError);
  CHECK_THROWS_AS(load_tensor_dump(dir.path().string() + "/absent.json"), kvlayout::spec::SpecError);
  // data_ptr as a JSON integer, up to 2^64 - 1.
  Json record = good_record();
  record["data_ptr"] = 18446744073709551615ULL;
  CHECK(load_tensor_dump(dir.write("max.json", Json{{"tensors", {record}}}.dump())).records.at(0).data_ptr ==
        18446744073709551615ULL);
}

TEST_CASE("kvlayout prove/emit --tensors: checked before proving, mismatch exits 1 with nothing proved", "[check][geometry][cli]") {
  const std::string good = data("flash-nhd-small.json"), padded = data("flash-nhd-small-padded.json");
  auto ok = run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --tensors " + good);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("EXACT_TOKEN"));

  auto bad = run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --tensors " + padded);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.out, Catch::Contains("GEOMETRY_MISMATCH"));
  CHECK_THAT(bad.out, Catch::Contains("stride of axis 1 (extent num_blocks): declared 1024, observed 1088"));
  CHECK_THAT(bad.out, !Catch::Contains("EXACT"));

  // --target-tensors checks DST: the NHD dump is not an HND cache.
  auto target = run_kvlayout("prove vllm-flash-hnd vllm-flash-nhd --cache small --target-tensors " + good);
  CHECK(target.exit_code == 0);
  auto wrong_side = run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --target-tensors " + good + " --json");
  CHECK(wrong_side.exit_code == 1);
  Json j = Json::parse(wrong_side.out);
  CHECK(j["verdict"] == "GEOMETRY_MISMATCH");
  CHECK(j["counterexample"]["field"] == "stride");
  CHECK(j["obligations"][0]["name"] == "geometry");

  // --param binds the cache shape the tensors were made for.
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --param head_size=32 --tensors " +
                     data("flash-nhd-small-head32.json")).exit_code == 0);

  TempDir dir;
  auto emitted = run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --tensors " + good +
                              " -o " + (dir.path() / "k.cpp").string());
  CHECK(emitted.exit_code == 0);
  auto refused = run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --tensors " + padded +
                              " -o " + (dir.path() / "bad.cpp").string());
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out, Catch::Contains("GEOMETRY_MISMATCH"));
  CHECK(!std::filesystem::exists(dir.path() / "bad.cpp"));

  std::string bad_dump = dir.write("bad.json", R"({"tensors": [{"tensor": "kv_cache"}]})");
  auto input = run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --tensors " + bad_dump);
  CHECK(input.exit_code == 2);
  CHECK_THAT(input.err, Catch::Contains(bad_dump + ": /tensors/0: found no member \"instance\""));
  CHECK_THAT(run_kvlayout("prove --help").out, Catch::Contains("--tensors DUMP"));
  CHECK_THAT(run_kvlayout("emit --help").out, Catch::Contains("--target-tensors DUMP"));
}

TEST_CASE("geometry at production size: llama-3.1-70b, 80 per-layer allocations", "[check][geometry]") {
  auto bound = kvlayout::test::bind_named("vllm-flash-nhd", "llama-3.1-70b");
  REQUIRE(bound.fits());
  TempDir dir;
  Json dump = production_dump();
  auto good = check_geometry(bound, load_tensor_dump(dir.write("good.json", dump.dump())));
  CHECK(good.verdict == Verdict::Ok);
  CHECK_THAT(good.message, Catch::Contains("80 record(s)"));

  Json stride = dump;
  stride["tensors"][79]["stride"][2] = 1088;
  auto r = check_geometry(bound, load_tensor_dump(dir.write("stride.json", stride.dump())));
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["record"] == "/tensors/79");
  CHECK(r.counterexample["axis_expr"] == "block_size");
  CHECK(r.counterexample["declared"] == 1024);

  Json missing = dump;
  missing["tensors"].erase(17);
  r = check_geometry(bound, load_tensor_dump(dir.write("missing.json", missing.dump())));
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.message == "/tensors: declared 80 instance(s) of kv_cache, the dump has 79 (missing: 17)");

  Json overlap = dump;
  overlap["tensors"][4]["data_ptr"] = "0x7f0060001000";  // inside layer 3's 512 MiB
  r = check_geometry(bound, load_tensor_dump(dir.write("overlap.json", overlap.dump())));
  REQUIRE(r.verdict == Verdict::GeometryMismatch);
  CHECK(r.counterexample["field"] == "data_ptr");
  CHECK(r.counterexample["other_record"] == "/tensors/3");

  std::string file = dir.write("cli.json", dump.dump());
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache llama-3.1-70b --tensors " + file).exit_code == 0);
  CHECK(run_kvlayout("prove vllm-flash-nhd vllm-flash-hnd --cache small --tensors " + file).exit_code == 1);
}

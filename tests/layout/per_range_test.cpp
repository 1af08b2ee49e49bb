// "per_range": [FIRST, END] — a tensor with instances only for the per coordinate's values in [FIRST, END)
// (a pipeline-parallel stage's layers): binding, addresses, refused ranges, and the PP family's
// first_layer / end_layer against vLLM's get_pp_indices.
#include <catch2/catch.hpp>
#include <utility>

#include "layout/address.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/catalog.hpp"
#include "spec/error.hpp"

using namespace kvlayout;
using kvlayout::test::bind_inline;
using kvlayout::test::flash_nhd_declaration;
using kvlayout::test::small_cache;
using kvlayout::test::TempDir;
using I = std::int64_t;

namespace {

// FlashAttention NHD holding the layers [first, end), its tensor one instance per held layer.
spec::Json stage(const std::string& first, const std::string& end) {
  auto j = flash_nhd_declaration();
  j["params"]["first_layer"] = first;
  j["params"]["end_layer"] = end;
  j["holds"] = "layer >= first_layer && layer < end_layer";
  j["tensors"][0]["per_range"] = spec::Json::array({"first_layer", "end_layer"});
  return j;
}

void expect_spec_error(const TempDir& dir, const spec::Json& j, const std::string& path, const std::string& part,
                       const layout::Overrides& overrides = {}) {
  try {
    bind_inline(dir, j, small_cache(), overrides);
    FAIL("accepted without error");
  } catch (const spec::SpecError& e) {
    INFO(e.what());
    CHECK(e.file == (dir.path() / "case.json").string());
    CHECK(e.path == path);
    CHECK_THAT(e.what(), Catch::Contains(part));
  }
}

// vLLM's get_pp_indices without VLLM_PP_LAYER_PARTITION, transcribed (vllm/distributed/utils.py@5a6541db).
std::pair<I, I> get_pp_indices(I num_hidden_layers, I pp_rank, I pp_size) {
  const I layers_per_partition = num_hidden_layers / pp_size;
  std::vector<I> partitions(static_cast<std::size_t>(pp_size), layers_per_partition);
  const I remaining_layers = num_hidden_layers % pp_size;
  for (I i = 2; i < remaining_layers + 2; ++i) partitions[static_cast<std::size_t>(pp_size - i)] += 1;  // partitions[-i]
  I start_layer = 0;
  for (I r = 0; r < pp_rank; ++r) start_layer += partitions[static_cast<std::size_t>(r)];
  return {start_layer, start_layer + partitions[static_cast<std::size_t>(pp_rank)]};
}

}  // namespace

TEST_CASE("per_range: END - FIRST instances starting at FIRST", "[layout][per-range]") {
  TempDir dir;
  auto b = bind_inline(dir, stage("1", "num_layers - 1"), small_cache(), {{"num_layers", 5}});
  REQUIRE(b.fits());
  const auto& t = b.tensors.at(0);
  CHECK(t.per == 0);
  CHECK(t.per_first == 1);
  CHECK(t.instances == 3);
  CHECK(t.size == 2 * 5120);
  // Without per_range: every layer, from 0.
  auto whole = bind_inline(dir, flash_nhd_declaration(), small_cache(), {{"num_layers", 5}});
  CHECK(whole.tensors.at(0).per_first == 0);
  CHECK(whole.tensors.at(0).instances == 5);
}

TEST_CASE("per_range: a position's instance is its coordinate - FIRST", "[layout][per-range][address]") {
  TempDir dir;
  auto b = bind_inline(dir, stage("1", "4"), small_cache(), {{"num_layers", 5}});
  auto tables = layout::identity_tables(b);
  for (I layer = 1; layer < 4; ++layer) {
    std::vector<I> coord = {layer, 1, 20, 3, 5};
    auto loc = layout::locate(b, coord, tables);
    REQUIRE(loc.placement == layout::Placement::Held);
    CHECK(loc.address.instance == layer - 1);
    CHECK(loc.address.offset == 5120 + 1 * 1024 + 4 * 64 + 3 * 16 + 5);
  }
  std::vector<I> outside = {4, 1, 20, 3, 5};
  CHECK(layout::locate(b, outside, tables).placement == layout::Placement::NotHeld);
}

TEST_CASE("per_range: a held position outside the range is out of bounds, as an index outside its axis is", "[layout][per-range][address]") {
  TempDir dir;
  auto j = stage("1", "3");
  j["holds"] = "layer < 3";  // holds layer 0, which has no instance
  auto b = bind_inline(dir, j, small_cache(), {{"num_layers", 4}});
  auto tables = layout::identity_tables(b);
  std::vector<I> below = {0, 0, 1, 2, 3};
  auto loc = layout::locate(b, below, tables);
  CHECK(loc.placement == layout::Placement::OutOfBounds);
  CHECK(loc.address.instance == -1);
  CHECK_THAT(loc.violation, Catch::Contains("instance layer - 1 = -1 is outside the 2 instance(s) of kv_cache"));
  std::vector<I> inside = {2, 0, 1, 2, 3};
  CHECK(layout::locate(b, inside, tables).placement == layout::Placement::Held);

  j["holds"] = "layer >= 1";  // holds layer 3, one past the range
  b = bind_inline(dir, j, small_cache(), {{"num_layers", 4}});
  std::vector<I> above = {3, 1, 0, 0, 0};
  loc = layout::locate(b, above, tables);
  CHECK(loc.placement == layout::Placement::OutOfBounds);
  CHECK(loc.address.instance == 2);
  CHECK_THAT(loc.violation, Catch::Contains("(layer in [1, 3))"));
}

TEST_CASE("per_range: an empty range or one past the coordinate's extent is refused with file and path", "[layout][per-range][errors]") {
  TempDir dir;
  expect_spec_error(dir, stage("0", "num_layers + 1"), "/tensors/0/per_range", "the range [0, 3) of layer");
  expect_spec_error(dir, stage("0", "num_layers + 1"), "/tensors/0/per_range", "within layer's values [0, 2)");
  expect_spec_error(dir, stage("1", "1"), "/tensors/0/per_range", "the range [1, 1) of layer");
  expect_spec_error(dir, stage("2", "1"), "/tensors/0/per_range", "a non-empty range");
  expect_spec_error(dir, stage("-1", "1"), "/tensors/0/per_range", "the range [-1, 1) of layer");
  // An override moves the range past the extent: refused on that cache shape.
  expect_spec_error(dir, stage("0", "2"), "/tensors/0/per_range", "the range [0, 2) of layer", {{"num_layers", 1}});
  // An expression that fails names its own path.
  auto j = stage("0", "1");
  j["tensors"][0]["per_range"][1] = "num_layers / (num_layers - 2)";
  expect_spec_error(dir, j, "/tensors/0/per_range/1", "division by zero");
}

TEST_CASE("per_range: load-time errors (without per, not two expressions, naming a coordinate)", "[layout][per-range][spec][errors]") {
  TempDir dir;
  auto j = stage("0", "1");
  j["tensors"][0].erase("per");
  expect_spec_error(dir, j, "/tensors/0/per_range", "without \"per\"");
  j = stage("0", "1");
  j["tensors"][0]["per_range"] = spec::Json::array({0, 1, 2});
  expect_spec_error(dir, j, "/tensors/0/per_range", "[FIRST, END]");
  j["tensors"][0]["per_range"] = "num_layers";
  expect_spec_error(dir, j, "/tensors/0/per_range", "[FIRST, END]");
  j["tensors"][0]["per_range"] = spec::Json::array({"layer", 1});  // sizes only: not a coordinate
  expect_spec_error(dir, j, "/tensors/0/per_range/0", "layer");
  j["tensors"][0]["per_range"] = spec::Json::array({"no_such", 1});
  expect_spec_error(dir, j, "/tensors/0/per_range/0", "no_such");
  j["tensors"][0]["per_range"] = spec::Json::array({"0 < 1", 1});  // a truth value is not an integer
  expect_spec_error(dir, j, "/tensors/0/per_range/0", "");
}

TEST_CASE("the PP family's first_layer and end_layer are vLLM's get_pp_indices for 1..130 layers and 1..16 stages", "[layout][per-range][pp]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = small_cache();
  for (const char* name : {"vllm-flash-nhd-pp", "vllm-flash-nhd-tp-pp"}) {
    auto family = spec::load_layout(catalog.find_layout(name).string());
    REQUIRE(family->tensors.at(0).per_first);
    int compared = 0;
    for (I layers = 1; layers <= 130; ++layers) {
      for (I size = 1; size <= 16; ++size) {
        for (I rank = 0; rank < size; ++rank) {
          auto b = layout::bind(family, small, {{"num_layers", layers}, {"pp_size", size}, {"pp_rank", rank}});
          if (size > layers) {  // a stage without layers: requires says no
            CHECK_FALSE(b.fits());
            continue;
          }
          auto [first, end] = get_pp_indices(layers, rank, size);
          if (b.values.at("first_layer") != first || b.values.at("end_layer") != end || !b.fits() ||
              b.tensors.at(0).per_first != first || b.tensors.at(0).instances != end - first) {
            INFO(name << ": num_layers " << layers << ", pp_size " << size << ", pp_rank " << rank << ": vLLM [" << first
                      << ", " << end << "), declared [" << b.values.at("first_layer") << ", " << b.values.at("end_layer") << ")");
            CHECK(false);
          }
          ++compared;
        }
      }
    }
    CHECK(compared > 15000);
  }
  // The transcription itself, by hand: 10 layers over 4 stages, 10 // 4 = 2 each and the remainder 2 to
  // partitions[-2] and [-3]: [2, 3, 3, 2].
  CHECK(get_pp_indices(10, 0, 4) == std::pair<I, I>{0, 2});
  CHECK(get_pp_indices(10, 1, 4) == std::pair<I, I>{2, 5});
  CHECK(get_pp_indices(10, 2, 4) == std::pair<I, I>{5, 8});
  CHECK(get_pp_indices(10, 3, 4) == std::pair<I, I>{8, 10});
  CHECK(get_pp_indices(7, 0, 4) == std::pair<I, I>{0, 2});  // 1 each, remainder 3 to [-2], [-3], [-4]: [2, 2, 2, 1]
  CHECK(get_pp_indices(7, 3, 4) == std::pair<I, I>{6, 7});
}

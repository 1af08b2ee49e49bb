// The cross-check shape of a pair: `small` when both layouts fit it, else a shape derived from it by
// varying only what the failed requirements read, else none, with the reason.
#include <catch2/catch.hpp>

#include "enumerate/cross_check.hpp"
#include "enumerate/derive_shape.hpp"
#include "layout/layout_fixture.hpp"
#include "prove/proof.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

// A dense per-head layout, [layer][kv][token][head][dim], with the given requirements.
std::shared_ptr<const spec::Layout> dense(const test::TempDir& dir, const std::string& name, spec::Json requires_) {
  spec::Json d = spec::Json::parse(R"J({
    "engine": "hand-built", "control": true, "content": "kv-heads", "dtype": "bf16",
    "params": {"block_size": 16, "num_blocks": "ceil_div(num_tokens, block_size)"},
    "tensors": [{"name": "cache", "shape": ["num_layers", 2, "num_tokens", "num_kv_heads", "head_size"],
                 "index": ["layer", "kv", "token", "head", "dim"]}]
  })J");
  d["name"] = name;
  d["requires"] = std::move(requires_);
  return spec::load_layout(dir.write(name + ".json", d.dump()));
}

spec::CacheShape shipped(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache(name).string());
}

}  // namespace

TEST_CASE("derive: a pair that fits small is cross-checked on small itself", "[enumerate][derive]") {
  test::TempDir dir;
  auto a = dense(dir, "a", spec::Json::array()), b = dense(dir, "b", spec::Json::array({"head_size % 8 == 0"}));
  auto c = enumerate::cross_check_shape(a, b, test::small_cache(), shipped("llama-3.1-70b"));
  REQUIRE(c.shape);
  CHECK(c.shape->name == "small");
  CHECK(c.shape->params == test::small_cache().params);
}

TEST_CASE("derive: head_size 128 of the proof shape, few tokens and layers kept, and the row is cross-checked there",
          "[enumerate][derive]") {
  test::TempDir dir;
  auto nofit = dense(dir, "nofit", spec::Json::array({"head_size == 128"})), plain = dense(dir, "plain", spec::Json::array());
  const spec::CacheShape small = test::small_cache();
  for (const char* proof : {"llama-3.1-70b", "deepseek-v3"}) {  // deepseek-v3 binds no head_size: 128 is a candidate
    INFO(proof);
    auto c = enumerate::cross_check_shape(nofit, plain, small, shipped(proof));
    REQUIRE(c.shape);
    CHECK(c.shape->name == "small[head_size=128]");
    spec::CacheShape expected = small;
    expected.params["head_size"] = 128;
    CHECK(c.shape->params == expected.params);
    CHECK(c.shape->synthetic);
  }
  // On small the pair is not cross-checked (nothing compared); on the derived shape it is, and agrees.
  auto on_small = enumerate::cross_check(enumerate::enumerate_layout(nofit, small), enumerate::enumerate_layout(plain, small));
  CHECK_FALSE(on_small.checked);
  CHECK(on_small.positions_checked == 0);
  CHECK_THAT(on_small.not_checked, Catch::Contains("nofit does not fit small"));
  const spec::CacheShape derived = *enumerate::cross_check_shape(nofit, plain, small, shipped("llama-3.1-70b")).shape;
  auto cross = enumerate::cross_check(enumerate::enumerate_layout(nofit, derived), enumerate::enumerate_layout(plain, derived));
  CHECK(cross.checked);
  CHECK(cross.not_checked.empty());
  CHECK(cross.positions_checked == 2 * 3 * (2 * 2 * 67 * 4 * 128));
  prove::Proof p = prove::prove(nofit, plain, derived);
  CHECK(prove::grade_name(cross.grade) == prove::grade_name(p.grade));
  CHECK(cross.reason == p.reason);
  CHECK(cross.grade == prove::Grade::ExactByte);
}

TEST_CASE("derive: a requirement read through a layout parameter varies the cache parameter beneath it, within the limits",
          "[enumerate][derive]") {
  test::TempDir dir;
  // num_blocks = ceil_div(num_tokens, 16): 5 on small. The production 131072 tokens fit the requirement but
  // are too many positions to enumerate, so the first candidate that fits and enumerates is 64 tokens.
  auto four = dense(dir, "four", spec::Json::array({"num_blocks % 4 == 0"})), plain = dense(dir, "plain", spec::Json::array());
  auto c = enumerate::cross_check_shape(plain, four, test::small_cache(), shipped("llama-3.1-70b"));
  REQUIRE(c.shape);
  CHECK(c.shape->name == "small[num_tokens=64]");
}

TEST_CASE("derive: a pair no candidate lets fit is not cross-checked, and says why", "[enumerate][derive]") {
  test::TempDir dir;
  auto full = dense(dir, "full", spec::Json::array({"num_tokens == 131072"})), plain = dense(dir, "plain", spec::Json::array());
  auto c = enumerate::cross_check_shape(full, plain, test::small_cache(), shipped("llama-3.1-70b"));
  CHECK_FALSE(c.shape);
  CHECK_THAT(c.why_not, Catch::Contains("full does not fit small (requirement `num_tokens == 131072` is false"));
  CHECK_THAT(c.why_not, Catch::Contains("num_tokens in {131072, 67, 1, 2, 4,"));
  CHECK_THAT(c.why_not, Catch::Contains("lets both fit within the enumeration limits"));
  // A requirement that reads no cache-shape parameter has nothing to vary.
  auto never = dense(dir, "never", spec::Json::array({"block_size == 32"}));
  auto n = enumerate::cross_check_shape(plain, never, test::small_cache(), shipped("llama-3.1-70b"));
  CHECK_FALSE(n.shape);
  CHECK_THAT(n.why_not, Catch::Contains("no cache-shape parameter to vary"));
}

TEST_CASE("derive: candidates are the proof shape's value, small's, then powers of two, each once", "[enumerate][derive]") {
  auto v = enumerate::candidate_values("head_size", test::small_cache(), shipped("llama-3.1-70b"));
  CHECK(v == std::vector<std::int64_t>{128, 16, 1, 2, 4, 8, 32, 64, 256, 512, 1024, 2048, 4096});
  auto w = enumerate::candidate_values("head_size", test::small_cache(), shipped("deepseek-v3"));
  CHECK(w.front() == 16);
  CHECK(w.size() == 13);
}

TEST_CASE("derive: a parameter the small shape does not bind is supplied, the proof shape's value first",
          "[enumerate][derive]") {
  test::TempDir dir;
  auto plain = dense(dir, "plain", spec::Json::array());
  spec::CacheShape headless = test::small_cache();
  headless.name = "headless";
  headless.params.erase("head_size");
  auto c = enumerate::cross_check_shape(plain, plain, headless, shipped("llama-3.1-70b"));
  REQUIRE(c.shape);
  CHECK(c.shape->name == "headless[head_size=128]");
}

// The declaration loader: what it accepts, and the error catalogue (file, JSON path, found, expected).
#include <catch2/catch.hpp>

#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::spec::SpecError;
using kvlayout::test::TempDir;

namespace {

// A small valid declaration (FlashAttention NHD) that each case edits into one specific mistake.
Json valid_layout() {
  return Json::parse(R"J({
    "name": "case",
    "engine": "test engine",
    "cite": {"repo": "o/r", "path": "p.py", "symbol": "f", "commit": "abc"},
    "content": "kv-heads",
    "dtype": "bf16",
    "params": {"block_size": 16, "num_blocks": "ceil_div(num_tokens, block_size)"},
    "requires": ["block_size % 16 == 0"],
    "tables": {"block_table": {"length": "num_blocks", "range": "num_blocks"}},
    "tensors": [{
      "name": "kv_cache", "per": "layer",
      "shape": [2, "num_blocks", "block_size", "num_kv_heads", "head_size"],
      "index": ["kv", "block_table[token / block_size]", "token % block_size", "head", "dim"]
    }]
  })J");
}

std::shared_ptr<const kvlayout::spec::Layout> load(const TempDir& dir, const Json& j) {
  return kvlayout::spec::load_layout(dir.write("case.json", j.dump(2)));
}

// Loads `j` and requires a SpecError at `path` whose message contains `part`.
void expect_error(const Json& j, const std::string& path, const std::string& part) {
  TempDir dir;
  try {
    load(dir, j);
    FAIL("loaded without error; expected an error at " << path);
  } catch (const SpecError& e) {
    INFO(e.what());
    CHECK(e.path == path);
    CHECK_THAT(e.what(), Catch::Contains(part));
    CHECK_THAT(e.file, Catch::EndsWith("case.json"));
  }
}

}  // namespace

TEST_CASE("a valid declaration loads with its parts", "[spec][load]") {
  TempDir dir;
  auto l = load(dir, valid_layout());
  CHECK(l->name == "case");
  CHECK(l->content.name == "kv-heads");
  CHECK(l->content.coords.size() == 5);
  CHECK(l->params.size() == 2);
  CHECK(l->tables.size() == 1);
  CHECK(l->tensors.at(0).views.size() == 1);
  CHECK(l->tensors.at(0).per == "layer");
  CHECK(kvlayout::spec::format_citation(*l->cite) == "o/r@abc:p.py::f");
}

TEST_CASE("views, offsets, stride orders, strides, table ranges and custom contents load", "[spec][load]") {
  TempDir dir;
  Json j = valid_layout();
  j["tables"]["block_table"]["range"] = Json::array({1, "num_blocks + 1"});
  j["tensors"][0] = Json::parse(R"J({
    "name": "kv_cache", "per": "layer", "shape": [2, "num_blocks * block_size * num_kv_heads * head_size"],
    "views": [
      {"name": "k", "holds": "kv == 0", "shape": ["num_blocks", "block_size", "num_kv_heads", "head_size"],
       "index": ["block_table[token / block_size] - 1", "token % block_size", "head", "dim"], "stride_order": [0, 2, 1, 3]},
      {"name": "v", "holds": "kv == 1", "offset": "num_blocks * block_size * num_kv_heads * head_size",
       "shape": ["num_blocks", "block_size", "num_kv_heads", "head_size"],
       "index": ["block_table[token / block_size] - 1", "token % block_size", "head", "dim"],
       "strides": ["block_size * num_kv_heads * head_size", "num_kv_heads * head_size", "head_size", 1]}
    ]})J");
  auto l = load(dir, j);
  REQUIRE(l->tensors.at(0).views.size() == 2);
  CHECK(l->tensors[0].views[0].stride_order == std::vector<int>{0, 2, 1, 3});
  CHECK(l->tensors[0].views[1].strides.size() == 4);
  CHECK(l->tables[0].first.text == "1");

  Json custom = valid_layout();
  custom["content"] = "per-token-scales";
  custom["coords"] = Json::parse(R"J({"layer": "num_layers", "token": "num_tokens"})J");
  custom["tensors"][0]["shape"] = Json::array({"num_blocks", "block_size"});
  custom["tensors"][0]["index"] = Json::array({"block_table[token / block_size]", "token % block_size"});
  auto c = load(dir, custom);
  CHECK(c->content.name == "per-token-scales");
  CHECK(c->content.coords.size() == 2);
}

TEST_CASE("error catalogue: malformed JSON names the line and column", "[spec][load][errors]") {
  TempDir dir;
  std::string file = dir.write("case.json", "{\n  \"name\": \"case\",\n  \"engine\": oops\n}\n");
  try {
    kvlayout::spec::load_layout(file);
    FAIL("loaded");
  } catch (const SpecError& e) {
    CHECK_THAT(e.what(), Catch::Contains("malformed JSON at line 3"));
    CHECK_THAT(e.what(), Catch::Contains("expected a valid JSON document"));
  }
}

TEST_CASE("error catalogue: missing and misspelt fields", "[spec][load][errors]") {
  Json j = valid_layout();
  j.erase("tensors");
  expect_error(j, "/", "no member \"tensors\"");
  j = valid_layout();
  j["tensors"][0].erase("index");
  expect_error(j, "/tensors/0", "no member \"index\"");
  j = valid_layout();
  j["tensors"][0]["stride_ordr"] = Json::array({0, 1, 2, 3, 4});
  expect_error(j, "/tensors/0/stride_ordr", "unknown member \"stride_ordr\"");
  j = valid_layout();
  j["dtype"] = "bfloat16";
  expect_error(j, "/dtype", "expected bf16, fp16, fp32");
  j = valid_layout();
  j["tensors"][0]["shape"][0] = 2.5;
  expect_error(j, "/tensors/0/shape/0", "the number 2.5");
  j = valid_layout();
  j["name"] = "other";
  expect_error(j, "/name", "the file's stem \"case\"");
}

TEST_CASE("error catalogue: unknown dimension or parameter", "[spec][load][errors]") {
  Json j = valid_layout();
  j["tensors"][0]["index"][2] = "tokn % block_size";
  expect_error(j, "/tensors/0/index/2", "unknown name `tokn`");
  j = valid_layout();
  j["tensors"][0]["shape"][2] = "blok_size";
  expect_error(j, "/tensors/0/shape/2", "unknown name `blok_size`");
  j = valid_layout();
  j["tensors"][0]["shape"][2] = "token";  // a coordinate where only sizes are visible
  expect_error(j, "/tensors/0/shape/2", "unknown name `token`");
  j = valid_layout();
  j["tensors"][0]["index"][1] = "page_table[token / block_size]";
  expect_error(j, "/tensors/0/index/1", "a declared table (block_table)");
  j = valid_layout();
  j["tensors"][0]["per"] = "layers";
  expect_error(j, "/tensors/0/per", "a coordinate of kv-heads");
  j = valid_layout();
  j["params"]["num_tokens"] = 5;
  expect_error(j, "/params/num_tokens", "not a coordinate or cache-shape parameter");
}

TEST_CASE("error catalogue: index count differs from the shape's rank", "[spec][load][errors]") {
  Json j = valid_layout();
  j["tensors"][0]["index"].erase(4);
  expect_error(j, "/tensors/0/index", "found 4 index expressions; expected 5, one per axis");
  j = valid_layout();
  j["tensors"][0]["stride_order"] = Json::array({0, 1, 3, 2});
  expect_error(j, "/tensors/0/stride_order", "expected 5, a permutation");
  j = valid_layout();
  j["tensors"][0]["stride_order"] = Json::array({0, 1, 3, 3, 4});
  expect_error(j, "/tensors/0/stride_order/3", "exactly once");
  j = valid_layout();
  j["tensors"][0]["strides"] = Json::array({1, 1});
  expect_error(j, "/tensors/0/strides", "found 2 strides; expected 5");
}

TEST_CASE("error catalogue: expressions that do not parse or are mistyped", "[spec][load][errors]") {
  Json j = valid_layout();
  j["tensors"][0]["index"][2] = "token %% block_size";
  expect_error(j, "/tensors/0/index/2", "does not parse");
  j = valid_layout();
  j["requires"][0] = "block_size";
  expect_error(j, "/requires/0", "which is an integer; expected a truth value here");
  j = valid_layout();
  j["tensors"][0]["index"][0] = "kv == 0";
  expect_error(j, "/tensors/0/index/0", "which is a truth value; expected an integer here");
}

TEST_CASE("error catalogue: cyclic parameter definitions name the cycle", "[spec][load][errors]") {
  Json j = valid_layout();
  j["params"]["a"] = "b + 1";
  j["params"]["b"] = "c * 2";
  j["params"]["c"] = "a";
  TempDir dir;
  try {
    load(dir, j);
    FAIL("loaded");
  } catch (const SpecError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cyclic parameter definition"));
    std::string m = e.what();
    bool named = m.find("a -> b -> c -> a") != std::string::npos || m.find("b -> c -> a -> b") != std::string::npos ||
                 m.find("c -> a -> b -> c") != std::string::npos;
    CHECK(named);
    CHECK_THAT(e.path, Catch::StartsWith("/params/"));
  }
  j = valid_layout();
  j["params"]["block_size"] = "block_size * 2";
  expect_error(j, "/params/block_size", "block_size -> block_size");
}

TEST_CASE("error catalogue: empty names and names expressions cannot write", "[spec][load][errors]") {
  Json j = valid_layout();
  j["tensors"][0]["per"] = "";  // not a way of saying "one instance"
  expect_error(j, "/tensors/0/per", "the empty string");
  j = valid_layout();
  j["tensors"][0]["name"] = "";
  expect_error(j, "/tensors/0/name", "the empty string");
  j = valid_layout();
  j["engine"] = "";
  expect_error(j, "/engine", "the empty string");
  j = valid_layout();
  j["cite"]["symbol"] = "";
  expect_error(j, "/cite/symbol", "the empty string");
  j = valid_layout();
  j["tensors"][0]["name"] = "kv\ncache";
  expect_error(j, "/tensors/0/name", "a control character");
  j = valid_layout();
  j["params"][""] = 1;
  expect_error(j, "/params/", "a parameter named \"\"");
  j = valid_layout();
  j["params"]["2x"] = 1;
  expect_error(j, "/params/2x", "letters, digits and _");
  j = valid_layout();
  j["tables"][""] = j["tables"]["block_table"];
  expect_error(j, "/tables/", "a table named \"\"");
  j = valid_layout();
  j["scale"] = Json{{"dtype", "fp32"}, {"per", Json::array({""})}};
  expect_error(j, "/scale/per/0", "the empty string");
  j = valid_layout();
  j["content"] = "";
  j["coords"] = Json{{"x", 2}};
  expect_error(j, "/content", "the empty string");
  j["content"] = "rows";
  j["coords"] = Json{{"", 2}};
  expect_error(j, "/coords/", "a coordinate named \"\"");
  j["coords"] = Json{{"a b", 2}};
  expect_error(j, "/coords/a b", "a coordinate named \"a b\"");
}

TEST_CASE("error catalogue: is_pow2 tests parameters only", "[spec][load][errors]") {
  Json j = valid_layout();
  j["holds"] = "is_pow2(head + 1) || kv == 0";
  expect_error(j, "/holds", "depends on the coordinate `head`");
  j = valid_layout();
  j["tensors"][0]["holds"] = "!is_pow2(token % block_size)";
  expect_error(j, "/tensors/0/holds", "is_pow2 of an expression over parameters only");
  j = valid_layout();
  j["requires"] = Json::array({"is_pow2(block_size)"});
  j["holds"] = "is_pow2(num_kv_heads * block_size) && head >= 0";
  TempDir dir;
  CHECK_NOTHROW(load(dir, j));
}

TEST_CASE("error catalogue: a missing citation is an error unless the layout is a control", "[spec][load][errors]") {
  Json j = valid_layout();
  j.erase("cite");
  expect_error(j, "/", "no \"cite\"");
  j["control"] = true;
  TempDir dir;
  CHECK_FALSE(load(dir, j)->cite.has_value());
  j = valid_layout();
  j["cite"].erase("commit");
  expect_error(j, "/cite", "neither \"commit\" nor \"version\"");
  j = valid_layout();
  j["cite"].erase("symbol");
  expect_error(j, "/cite", "no member \"symbol\"");
}

TEST_CASE("an observation names the pinned package, its conformance test and what agreed", "[spec][load]") {
  Json j = valid_layout();
  j["cite"].erase("commit");
  j["cite"]["version"] = "vllm==0.33.0";
  j["observed"] = {{"package", "vllm==0.33.0"}, {"test", "conformance/test_vllm.py"}, {"checks", {"geometry", "bytes"}}};
  TempDir dir;
  auto L = load(dir, j);
  REQUIRE(L->observed.has_value());
  CHECK(L->observed->package == "vllm==0.33.0");
  CHECK(L->observed->test == "conformance/test_vllm.py");
  CHECK(L->observed->checks == std::vector<std::string>{"geometry", "bytes"});
  j.erase("observed");
  CHECK_FALSE(load(dir, j)->observed.has_value());
}

TEST_CASE("error catalogue: an observation must pin what ran and what the citation read", "[spec][load][errors]") {
  Json base = valid_layout();
  base["cite"].erase("commit");
  base["cite"]["version"] = "vllm==0.33.0";
  base["observed"] = {{"package", "vllm==0.33.0"}, {"test", "conformance/test_vllm.py"}, {"checks", {"geometry"}}};
  Json j = base;
  j["observed"]["package"] = "vllm";
  expect_error(j, "/observed/package", "NAME==VERSION");
  j = base;
  j["observed"]["package"] = "vllm==0.34.0";
  expect_error(j, "/observed", "what ran is what was read");
  j = base;
  j["cite"].erase("version");
  j["cite"]["commit"] = "abc";
  expect_error(j, "/observed", "pinned by commit");
  j = base;
  j["observed"]["test"] = "tests/test_vllm.py";
  expect_error(j, "/observed/test", "under conformance/");
  j = base;
  j["observed"]["checks"] = Json::array();
  expect_error(j, "/observed/checks", "\"geometry\" first");
  j = base;
  j["observed"]["checks"] = {"bytes"};
  expect_error(j, "/observed/checks", "\"geometry\" first");
  j = base;
  j["observed"]["checks"] = {"geometry", "vibes"};
  expect_error(j, "/observed/checks/1", "\"geometry\" or \"bytes\"");
  j = base;
  j["observed"]["checks"] = {"geometry", "geometry"};
  expect_error(j, "/observed/checks/1", "twice");
  j = base;
  j["observed"]["by"] = "me";
  expect_error(j, "/observed/by", "unknown member");
  j = base;
  j.erase("cite");
  j["control"] = true;
  expect_error(j, "/observed", "control");
}

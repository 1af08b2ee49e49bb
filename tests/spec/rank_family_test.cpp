// Rank families in the declaration language: "ranks", spec::with_params, thin instance files
// ("instance_of" + "bind"), and the error catalogue of each (file, JSON path, found, expected).
#include <catch2/catch.hpp>
#include <algorithm>
#include <string>

#include "spec/catalog.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::spec::Layout;
using kvlayout::spec::SpecError;
using kvlayout::test::TempDir;

namespace {

std::string shipped_path(const std::string& name) {
  kvlayout::spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return catalog.find_layout(name).string();
}

// The shipped vLLM TP family as a document to edit, renamed "fam".
Json family_doc() {
  Json j = kvlayout::spec::read_json_file(shipped_path("vllm-flash-nhd-tp"));
  j["name"] = "fam";
  return j;
}

// vllm-flash-nhd (no ranks) renamed "plain".
Json plain_doc() {
  Json j = kvlayout::spec::read_json_file(shipped_path("vllm-flash-nhd"));
  j["name"] = "plain";
  return j;
}

Json thin_doc(const std::string& name, const std::string& family) {
  return Json{{"name", name}, {"instance_of", family}, {"bind", Json{{"tp_size", 2}, {"tp_rank", 1}}}};
}

// The declared default of a parameter (its expression, the text as written and its JSON path).
const kvlayout::spec::SourceExpr& param(const Layout& l, const std::string& name) {
  auto it = std::find_if(l.params.begin(), l.params.end(), [&](const auto& p) { return p.name == name; });
  REQUIRE(it != l.params.end());
  return it->value;
}

// Loads `file` and requires a SpecError naming `file_stem`.json at `path`, with every part in `found` and a
// non-empty `expected` containing `expected_part`.
void expect_error(const std::string& file, const std::string& file_stem, const std::string& path,
                  const std::string& found_part, const std::string& expected_part) {
  try {
    kvlayout::spec::load_layout(file);
    FAIL("loaded without error; expected an error at " << path);
  } catch (const SpecError& e) {
    INFO(e.what());
    CHECK_THAT(e.file, Catch::EndsWith(file_stem + ".json"));
    CHECK(e.path == path);
    CHECK_THAT(e.found, Catch::Contains(found_part));
    CHECK_FALSE(e.expected.empty());
    CHECK_THAT(e.expected, Catch::Contains(expected_part));
  }
}

}  // namespace

TEST_CASE("a family declares its rank axes and is a family", "[spec][ranks]") {
  auto l = kvlayout::spec::load_layout(shipped_path("vllm-flash-nhd-tp"));
  CHECK(kvlayout::spec::is_family(*l));
  REQUIRE(l->ranks.size() == 1);
  CHECK(l->ranks[0].rank == "tp_rank");
  CHECK(l->ranks[0].size == "tp_size");
  CHECK(l->ranks[0].path == "/ranks/tp_rank");
  CHECK(l->instance_of.empty());
  CHECK(param(*l, "tp_size").text == "2");
  CHECK(param(*l, "tp_rank").text == "0");
  CHECK_FALSE(kvlayout::spec::is_family(*kvlayout::spec::load_layout(shipped_path("vllm-flash-nhd"))));
}

TEST_CASE("every shipped rank family ranges tp_rank over tp_size with both parameters declared", "[spec][ranks]") {
  for (const std::string name : {"vllm-flash-nhd-tp", "sglang-mha-tp", "trtllm-pool-tp", "vllm-mla-tp"}) {
    INFO(name);
    auto l = kvlayout::spec::load_layout(shipped_path(name));
    REQUIRE(kvlayout::spec::is_family(*l));
    REQUIRE(l->ranks.size() == 1);
    CHECK(l->ranks[0].rank == "tp_rank");
    CHECK(l->ranks[0].size == "tp_size");
    CHECK(param(*l, "tp_size").text == "2");
    CHECK(param(*l, "tp_rank").text == "0");
    REQUIRE(l->cite.has_value());
    CHECK_FALSE(l->cite->repo.empty());
    CHECK_FALSE(l->cite->symbol.empty());
    bool rank_in_range = false;
    for (const auto& r : l->requirements) rank_in_range = rank_in_range || r.text == "tp_rank >= 0 && tp_rank < tp_size";
    CHECK(rank_in_range);
  }
}

TEST_CASE("with_params binds parameters to literals and drops the bound rank axes", "[spec][ranks]") {
  auto family = kvlayout::spec::load_layout(shipped_path("vllm-flash-nhd-tp"));
  SECTION("every rank bound: one instance") {
    auto one = kvlayout::spec::with_params(*family, {{"tp_size", 4}, {"tp_rank", 3}}, "inst");
    CHECK(one->name == "inst");
    CHECK_FALSE(kvlayout::spec::is_family(*one));
    CHECK(param(*one, "tp_size").text == "4");
    CHECK(param(*one, "tp_rank").text == "3");
    CHECK(param(*one, "tp_rank").path == param(*family, "tp_rank").path);
    CHECK(param(*one, "first_head").text == param(*family, "first_head").text);  // derived ones untouched
    CHECK(kvlayout::spec::is_family(*family));  // the family itself is unchanged
    CHECK(param(*family, "tp_rank").text == "0");
  }
  SECTION("only the size bound: still a family") {
    auto sized = kvlayout::spec::with_params(*family, {{"tp_size", 8}}, "fam8");
    CHECK(kvlayout::spec::is_family(*sized));
    CHECK(param(*sized, "tp_size").text == "8");
  }
  SECTION("a parameter the layout lacks") {
    try {
      kvlayout::spec::with_params(*family, {{"tp_sise", 4}}, "x");
      FAIL("bound a parameter the layout does not declare");
    } catch (const SpecError& e) {
      INFO(e.what());
      CHECK_THAT(e.file, Catch::EndsWith("vllm-flash-nhd-tp.json"));
      CHECK(e.path == "/params");
      CHECK_THAT(e.found, Catch::Contains("tp_sise"));
      CHECK_THAT(e.expected, Catch::Contains("tp_size"));
    }
  }
}

TEST_CASE("a thin instance file loads as the family bound at its rank", "[spec][ranks]") {
  for (int r : {0, 1}) {
    const std::string name = "vllm-flash-nhd-tp2-r" + std::to_string(r);
    INFO(name);
    auto l = kvlayout::spec::load_layout(shipped_path(name));
    CHECK(l->name == name);
    CHECK_THAT(l->file, Catch::EndsWith(name + ".json"));
    CHECK_FALSE(kvlayout::spec::is_family(*l));
    CHECK(l->instance_of == "vllm-flash-nhd-tp");
    CHECK(param(*l, "tp_rank").text == std::to_string(r));
    CHECK(param(*l, "tp_size").text == "2");
    CHECK_FALSE(l->engine.empty());
    REQUIRE(l->cite.has_value());  // the family's citation
    CHECK(l->cite->repo == "vllm-project/vllm");
  }
}

TEST_CASE("a thin file of an inline family binds what it names", "[spec][ranks]") {
  TempDir dir;
  dir.write("fam.json", family_doc().dump(2));
  Json thin = thin_doc("inst", "fam");
  thin["engine"] = "rank 1 of 2";
  thin["description"] = "d";
  auto l = kvlayout::spec::load_layout(dir.write("inst.json", thin.dump(2)));
  CHECK(l->instance_of == "fam");
  CHECK(l->engine == "rank 1 of 2");
  CHECK(l->description == "d");
  CHECK(param(*l, "tp_rank").text == "1");
  // A thin file's own citation replaces the family's; a malformed one is refused at its path.
  thin["cite"] = Json{{"repo", "example/engine"}, {"path", "kv.py"}, {"symbol", "rank_cache"}, {"commit", "abc123"}};
  l = kvlayout::spec::load_layout(dir.write("inst.json", thin.dump(2)));
  REQUIRE(l->cite.has_value());
  CHECK(l->cite->repo == "example/engine");
  thin["cite"].erase("commit");
  expect_error(dir.write("inst.json", thin.dump(2)), "inst", "/cite", "neither", "commit");
}

TEST_CASE("bad rank axes are errors naming the file, path, what was found and what was expected",
          "[spec][ranks]") {
  TempDir dir;
  SECTION("a size that is not a parameter") {
    Json j = family_doc();
    j["ranks"] = Json{{"tp_rank", "tp_sz"}};
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks/tp_rank", "tp_sz", "parameter");
  }
  SECTION("a rank that is not a parameter") {
    Json j = family_doc();
    j["ranks"] = Json{{"rank", "tp_size"}};
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks/rank", "\"rank\"", "parameter");
  }
  SECTION("a rank over itself") {
    Json j = family_doc();
    j["ranks"] = Json{{"tp_size", "tp_size"}};
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks/tp_size", "a rank over itself", "different size");
  }
  SECTION("a parameter in two axes") {
    Json j = family_doc();
    j["params"]["pp_rank"] = 0;
    j["ranks"] = Json{{"tp_rank", "tp_size"}, {"pp_rank", "tp_size"}};
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks/pp_rank", "in two rank axes", "once");
  }
  SECTION("an empty ranks object") {
    Json j = family_doc();
    j["ranks"] = Json::object();
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks", "no rank axes", "tp_rank");
  }
  SECTION("a size that is not a name") {
    Json j = family_doc();
    j["ranks"] = Json{{"tp_rank", 2}};
    expect_error(dir.write("fam.json", j.dump(2)), "fam", "/ranks/tp_rank", "", "tp_size");
  }
  SECTION("ranks that are not an object") {
    Json j = family_doc();
    j["ranks"] = Json::array({"tp_rank"});
    try {
      kvlayout::spec::load_layout(dir.write("fam.json", j.dump(2)));
      FAIL("loaded ranks written as an array");
    } catch (const SpecError& e) {
      INFO(e.what());
      CHECK_THAT(e.file, Catch::EndsWith("fam.json"));
      CHECK(e.path == "/ranks");
      CHECK_FALSE(e.expected.empty());
    }
  }
}

TEST_CASE("bad thin instance files are errors naming the file, path, what was found and what was expected",
          "[spec][ranks]") {
  TempDir dir;
  dir.write("fam.json", family_doc().dump(2));
  dir.write("plain.json", plain_doc().dump(2));
  SECTION("instance_of a missing file") {
    auto f = dir.write("inst.json", thin_doc("inst", "nope").dump(2));
    expect_error(f, "inst", "/instance_of", "\"nope\"", "rank family");
  }
  SECTION("instance_of a layout that is not a family") {
    auto f = dir.write("inst.json", thin_doc("inst", "plain").dump(2));
    expect_error(f, "inst", "/instance_of", "has no \"ranks\"", "rank family");
  }
  SECTION("instance_of itself") {
    auto f = dir.write("inst.json", thin_doc("inst", "inst").dump(2));
    expect_error(f, "inst", "/instance_of", "the declaration itself", "rank family");
  }
  SECTION("a family that is itself thin") {
    dir.write("inst.json", thin_doc("inst", "fam").dump(2));
    auto f = dir.write("inst2.json", thin_doc("inst2", "inst").dump(2));
    expect_error(f, "inst2", "/instance_of", "itself a thin declaration", "rank family");
  }
  SECTION("bind of an unknown parameter") {
    Json j = thin_doc("inst", "fam");
    j["bind"]["tp_sise"] = 4;
    expect_error(dir.write("inst.json", j.dump(2)), "inst", "/bind/tp_sise", "tp_sise", "parameter of the family");
  }
  SECTION("bind missing a rank parameter") {
    Json j = thin_doc("inst", "fam");
    j["bind"].erase("tp_rank");
    expect_error(dir.write("inst.json", j.dump(2)), "inst", "/bind", "tp_rank", "every rank parameter");
  }
  SECTION("bind of a value that is not an integer") {
    Json j = thin_doc("inst", "fam");
    j["bind"]["tp_rank"] = "1";
    expect_error(dir.write("inst.json", j.dump(2)), "inst", "/bind/tp_rank", "", "integer");
  }
  SECTION("no bind at all") {
    Json j = thin_doc("inst", "fam");
    j.erase("bind");
    expect_error(dir.write("inst.json", j.dump(2)), "inst", "/", "no member \"bind\"", "tp_size");
  }
  SECTION("an unknown member") {
    Json j = thin_doc("inst", "fam");
    j["holds"] = "head < 2";  // a thin file binds; it does not redeclare
    try {
      kvlayout::spec::load_layout(dir.write("inst.json", j.dump(2)));
      FAIL("loaded a thin file with a member it may not have");
    } catch (const SpecError& e) {
      INFO(e.what());
      CHECK_THAT(e.file, Catch::EndsWith("inst.json"));
      CHECK_THAT(e.path + " " + e.found, Catch::Contains("holds"));
      CHECK_THAT(e.expected, Catch::Contains("instance_of"));
    }
  }
  SECTION("a name that is not the file's stem") {
    auto f = dir.write("inst.json", thin_doc("other", "fam").dump(2));
    expect_error(f, "inst", "/name", "\"other\"", "\"inst\"");
  }
}

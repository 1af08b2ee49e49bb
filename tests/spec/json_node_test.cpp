// JsonNode and read_json_file: integers in int64's range only, non-empty names, and a nesting limit applied
// while parsing (before a deep value exists to be copied recursively).
#include <catch2/catch.hpp>
#include <string>

#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::spec::JsonNode;
using kvlayout::spec::kMaxJsonDepth;
using kvlayout::spec::read_json_file;
using kvlayout::spec::SpecError;
using kvlayout::test::TempDir;

namespace {

// The SpecError `f` throws (it must throw one).
template <typename F>
SpecError error_of(F f) {
  try {
    f();
  } catch (const SpecError& e) {
    return e;
  }
  FAIL("no SpecError");
  throw std::logic_error("unreachable");
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string zeros(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "/0";
  return s;
}

}  // namespace

TEST_CASE("integer() and expression() take JSON integers from -2^63 to 2^63 - 1 and refuse larger ones", "[spec][json]") {
  Json doc = Json::parse(R"J({"max": 9223372036854775807, "min": -9223372036854775808, "two63": 9223372036854775808,
                              "u64max": 18446744073709551615, "big": 18446744073709551616, "neg": -5})J");
  JsonNode root(doc, "f.json", "");
  CHECK(root.at("max", "").integer("x") == INT64_MAX);
  CHECK(root.at("min", "").integer("x") == INT64_MIN);
  CHECK(root.at("neg", "").integer("x") == -5);
  CHECK(root.at("max", "").expression("x").expr->value == INT64_MAX);
  CHECK(root.at("min", "").expression("x").text == "-9223372036854775808");
  for (const char* key : {"two63", "u64max"}) {
    INFO(key);
    for (bool as_expression : {false, true}) {
      SpecError e = error_of([&] {
        JsonNode n = root.at(key, "");
        if (as_expression) n.expression("an integer expression");
        else n.integer("a positive integer");
      });
      CHECK(e.file == "f.json");
      CHECK(e.path == std::string("/") + key);
      CHECK(e.expected == "an integer in [-2^63, 2^63)");
      CHECK_THAT(e.found, Catch::Contains(doc[key].dump()));
    }
  }
  // Beyond 2^64 nlohmann reads a float: refused as a number, as before.
  SpecError e = error_of([&] { root.at("big", "").integer("a positive integer"); });
  CHECK(e.path == "/big");
  CHECK_THAT(e.found, Catch::Contains("the number"));
}

TEST_CASE("name() takes non-empty strings without control characters", "[spec][json]") {
  Json doc = Json::parse(R"J({"ok": "kv_cache", "empty": "", "newline": "a\nb", "number": 3})J");
  JsonNode root(doc, "f.json", "");
  CHECK(root.at("ok", "").name("a name") == "kv_cache");
  SpecError e = error_of([&] { root.at("empty", "").name("a name"); });
  CHECK(e.path == "/empty");
  CHECK(e.found == "the empty string");
  CHECK(e.expected == "a name");
  CHECK_THAT(error_of([&] { root.at("newline", "").name("a name"); }).found, Catch::Contains("control character"));
  CHECK(error_of([&] { root.at("number", "").name("a name"); }).found == "the integer 3");
}

TEST_CASE("read_json_file refuses nesting deeper than the limit while parsing", "[spec][json]") {
  REQUIRE(kMaxJsonDepth == 64);
  TempDir dir;
  // The root object and 63 arrays: exactly the limit.
  CHECK_NOTHROW(read_json_file(dir.write("ok.json", "{\"a\": " + nested(kMaxJsonDepth - 1) + "}")));
  CHECK_NOTHROW(read_json_file(dir.write("ok2.json", nested(kMaxJsonDepth))));

  SpecError e = error_of([&] { read_json_file(dir.write("deep.json", "{\"a\": " + nested(kMaxJsonDepth) + "}")); });
  CHECK_THAT(e.file, Catch::EndsWith("deep.json"));
  CHECK(e.path == "/a" + zeros(kMaxJsonDepth - 1));
  CHECK_THAT(e.found, Catch::Contains("nesting deeper than 64 levels") && Catch::Contains("line 1 column 70"));

  // Finding 07: 100000 levels followed by another member; the default stack holds (nothing deep is built).
  std::string text = "{\n  \"description\": " + nested(100000) + ",\n  \"name\": \"deep\"\n}\n";
  e = error_of([&] { read_json_file(dir.write("deep-100000.json", text)); });
  CHECK(e.path == "/description" + zeros(kMaxJsonDepth - 1));
  CHECK_THAT(e.found, Catch::Contains("line 2 column 81"));

  // Objects count too, and the pointer names the keys (escaped) and array positions on the way.
  std::string objects = "{\"x\": 1, \"a/b\": [0, {\"k\\\"ey\": ";
  for (int i = 0; i < 200; ++i) objects += "{\"m\": ";
  objects += "1" + std::string(200, '}') + "}]}";
  e = error_of([&] { read_json_file(dir.write("objects.json", objects)); });
  std::string expected = "/a~1b/1/k\"ey";
  for (int i = 0; i < kMaxJsonDepth - 3; ++i) expected += "/m";
  CHECK(e.path == expected);

  // A syntax error before the deep part is reported as the syntax error it is.
  e = error_of([&] { read_json_file(dir.write("bad.json", "{\"a\": x, \"b\": " + nested(100) + "}")); });
  CHECK_THAT(e.found, Catch::Contains("malformed JSON at line 1 column 7"));
}

TEST_CASE("read_json_file refuses a number beyond a double as malformed JSON, not an internal error", "[spec][json]") {
  // Found by the spec fuzzer: nlohmann's parser throws out_of_range (not parse_error) for 227e0470.
  TempDir dir;
  const std::string file = dir.write("big.json", R"({"name": "x", "commit": 227e0470})");
  SpecError e = error_of([&] { read_json_file(file); });
  CHECK(e.file == file);
  CHECK_THAT(e.found, Catch::Contains("number overflow"));
}

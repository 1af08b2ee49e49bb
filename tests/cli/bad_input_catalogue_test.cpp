// The bad-input catalogue: one small spec per class of error the README and the robustness findings name,
// each run through the CLI with the exit code it must give and the JSON path its one-line message must name
// ("FILE: PATH: found ..."). Bad input is exit 2 -- never a crash, a hang, an internal error (4) or a grade;
// a well-formed question with a negative answer is exit 1 with its reason code.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "spec/json_node.hpp"
#include "support/bad_input.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::test::check_contract;
using kvlayout::test::CommandResult;
using kvlayout::test::expect_bad_input;
using kvlayout::test::flash_nhd;
using kvlayout::test::kCoord;
using kvlayout::test::run_kvlayout;
using kvlayout::test::TempDir;

namespace {

// One class of malformed declaration: flash_nhd() edited into it, the JSON path the message names and a phrase
// of what was found or expected. Run with `addr` (every command loads and binds the same way).
struct LayoutCase {
  const char* what;
  std::function<void(Json&)> edit;
  std::string path;  // "" for errors located by line and column instead
  std::string part;
  std::string command = std::string("addr {file} --cache small ") + kCoord;
};

// Writes `text` as mine.json, runs `command` with {file} replaced, and requires exit 2 with the message
// "... mine.json: PATH: found ..." holding `part`.
void expect_at(const std::string& text, const std::string& path, const std::string& part, std::string command) {
  TempDir dir;
  std::string file = dir.write("mine.json", text);
  for (auto at = command.find("{file}"); at != std::string::npos; at = command.find("{file}"))
    command.replace(at, 6, "'" + file + "'");
  CommandResult r = expect_bad_input(command, {part});
  CHECK_THAT(r.err, Catch::Contains(path.empty() ? "mine.json: found " : "mine.json: " + path + ": found "));
}

// The declaration is accepted: addr answers it with exit 0 (the control beside each class of refusal).
void expect_accepted(const Json& declaration) {
  TempDir dir;
  CommandResult r = run_kvlayout("addr '" + dir.write("mine.json", declaration.dump()) + "' --cache small " + kCoord);
  check_contract(r);
  CHECK(r.exit_code == 0);
}

void run_cases(const std::vector<LayoutCase>& cases) {
  for (const LayoutCase& c : cases) {
    INFO(c.what);
    Json j = flash_nhd();
    c.edit(j);
    expect_at(j.dump(), c.path, c.part, c.command);
  }
}

// A custom content with a single coordinate, for cases on contents and coordinates.
Json rows() {
  return Json::parse(R"J({
    "name": "mine", "engine": "my engine", "control": true, "content": "rows", "coords": {"row": "num_tokens"},
    "dtype": "fp32", "tensors": [{"name": "t", "shape": ["num_tokens"], "index": ["row"]}]
  })J");
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST_CASE("catalogue: the JSON document", "[cli][errors][catalogue]") {
  // 64 levels are allowed (the root object and 63 arrays); the message names the container that opens level 65.
  auto zeros = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "/0";
    return s;
  };
  std::string deep = R"({"description": )" + nested(100000) + R"(, "name": "mine"})";
  struct Case {
    const char* what;
    std::string text, path, part;
  };
  for (const Case& c : {Case{"malformed JSON", "{\"name\": \"mine\",, }", "", "malformed JSON at line 1 column"},
                        Case{"not an object", "[1, 2]", "/", "found an array of 2; expected an object"},
                        Case{"100000 levels, then a member (finding 07)", deep, "/description" + zeros(63),
                             "nesting deeper than 64 levels"},
                        Case{"one level too deep", "{\"notes\": " + nested(64) + "}", "/notes" + zeros(63),
                             "nesting deeper than 64 levels"}}) {
    INFO(c.what);
    expect_at(c.text, c.path, c.part, std::string("addr {file} --cache small ") + kCoord);
  }
  // The deepest document the limit allows loads.
  Json j = flash_nhd();
  j["notes"] = Json::parse(nested(63));
  expect_accepted(j);
}

TEST_CASE("catalogue: members, kinds and numbers", "[cli][errors][catalogue]") {
  run_cases({
      {"an unknown member", [](Json& j) { j["tensors"][0]["stride_ordr"] = Json::array({0, 1, 2, 3, 4}); },
       "/tensors/0/stride_ordr", "an unknown member \"stride_ordr\""},
      {"a missing member", [](Json& j) { j["tensors"][0].erase("shape"); }, "/tensors/0", "no member \"shape\""},
      {"a string where an integer is expected", [](Json& j) { j["tensors"][0]["stride_order"] = Json::array({"a"}); },
       "/tensors/0/stride_order/0", "the string \"a\"; expected an axis number"},
      {"a fraction where an expression is expected", [](Json& j) { j["tensors"][0]["shape"][0] = 2.5; },
       "/tensors/0/shape/0", "the number 2.5"},
      {"an integer in [2^63, 2^64) (finding 05)", [](Json& j) { j["params"]["big"] = 18446744073709551615ull; },
       "/params/big", "expected an integer in [-2^63, 2^63)"},
      {"an integer just past int64", [](Json& j) { j["params"]["block_size"] = 9223372036854775808ull; },
       "/params/block_size", "the integer 9223372036854775808"},
      {"an integer beyond 64 bits", [](Json& j) { j["params"]["big"] = Json::parse("18446744073709551616"); },
       "/params/big", "the number 1.8446744073709552e+19"},
      {"an integer beyond int64 in a stride order", [](Json& j) {
         j["tensors"][0]["stride_order"] = Json::array({0, 1, 2, 3, 18446744073709551615ull}); },
       "/tensors/0/stride_order/4", "an integer in [-2^63, 2^63)"},
      {"a literal beyond 64 bits in an expression", [](Json& j) { j["params"]["big"] = "99999999999999999999"; },
       "/params/big", "does not fit in 64 bits"},
      {"the layout's name is not the file's stem", [](Json& j) { j["name"] = "other"; }, "/name",
       "expected the file's stem \"mine\""},
      {"no citation", [](Json& j) { j.erase("cite"); }, "/", "no \"cite\""},
      {"a citation without commit or version", [](Json& j) { j["cite"].erase("version"); }, "/cite",
       "neither \"commit\" nor \"version\""},
      {"an unknown element type", [](Json& j) { j["dtype"] = "bf17"; }, "/dtype", "the element type \"bf17\""},
      {"a custom content without coordinates", [](Json& j) { j["content"] = "kv-head"; }, "/content",
       "the custom content \"kv-head\" without \"coords\""},
      {"coordinates for a built-in content", [](Json& j) { j["coords"] = Json{{"x", 2}}; }, "/coords",
       "coordinates for the built-in content"},
      {"a scale per something that is not a coordinate", [](Json& j) {
         j["scale"] = Json{{"dtype", "fp32"}, {"per", Json::array({"layr"})}}; },
       "/scale/per/0", "a coordinate of kv-heads"},
      {"notes that are not text", [](Json& j) { j["notes"] = 3; }, "/notes", "a string or an array of strings"},
      {"no tensors", [](Json& j) { j["tensors"] = Json::array(); }, "/tensors", "no tensors"},
      {"views without an allocation", [](Json& j) {
         j["tensors"][0] = Json::parse(R"J({"name": "kv_cache", "per": "layer", "views": [{"shape": [1], "index": [0]}]})J"); },
       "/tensors/0", "\"views\" without \"shape\" or \"size\""},
      {"no views", [](Json& j) {
         j["tensors"][0] = Json::parse(R"J({"name": "kv_cache", "per": "layer", "size": 8, "views": []})J"); },
       "/tensors/0/views", "no views"},
      {"a table range that is not [FIRST, END]", [](Json& j) {
         j["tables"]["block_table"]["range"] = Json::array({0, 1, 2}); },
       "/tables/block_table/range", "[FIRST, END], two expressions"},
  });
}

TEST_CASE("catalogue: names", "[cli][errors][catalogue]") {
  run_cases({
      {"\"per\": \"\" (finding 10)", [](Json& j) { j["tensors"][0]["per"] = ""; }, "/tensors/0/per", "the empty string"},
      {"per a name that is not a coordinate", [](Json& j) { j["tensors"][0]["per"] = "nope"; }, "/tensors/0/per",
       "a coordinate of kv-heads"},
      {"an empty tensor name", [](Json& j) { j["tensors"][0]["name"] = ""; }, "/tensors/0/name", "the empty string"},
      {"an empty view name", [](Json& j) {
         j["tensors"][0] = Json::parse(R"J({"name": "kv_cache", "per": "layer", "size": 99999,
           "views": [{"name": "", "shape": [2, 5, 16, 4, 16],
                      "index": ["kv", "block_table[token / block_size]", "token % block_size", "head", "dim"]}]})J"); },
       "/tensors/0/views/0/name", "the empty string"},
      {"an empty layout name", [](Json& j) { j["name"] = ""; }, "/name", "the empty string"},
      {"an empty engine", [](Json& j) { j["engine"] = ""; }, "/engine", "the empty string"},
      {"an empty content name", [](Json& j) { j["content"] = ""; j["coords"] = Json{{"x", 2}}; }, "/content",
       "the empty string"},
      {"an empty citation field", [](Json& j) { j["cite"]["repo"] = ""; }, "/cite/repo", "the empty string"},
      {"a name with a control character", [](Json& j) { j["tensors"][0]["name"] = "kv\ncache"; }, "/tensors/0/name",
       "a control character"},
      {"an empty parameter name", [](Json& j) { j["params"][""] = 3; }, "/params/", "a parameter named \"\""},
      {"a parameter name expressions cannot write", [](Json& j) { j["params"]["block size"] = 3; },
       "/params/block size", "letters, digits and _"},
      {"an empty table name", [](Json& j) { j["tables"][""] = j["tables"]["block_table"]; }, "/tables/",
       "a table named \"\""},
      {"a parameter named like a coordinate", [](Json& j) { j["params"]["head"] = 3; }, "/params/head",
       "a parameter named \"head\""},
      {"a table named like a parameter", [](Json& j) { j["tables"]["block_size"] = j["tables"]["block_table"]; },
       "/tables/block_size", "a table named \"block_size\""},
      {"two tensors with one name", [](Json& j) { j["tensors"].push_back(j["tensors"][0]); }, "/tensors/1/name",
       "a second tensor named \"kv_cache\""},
  });
  // Coordinates of a custom content are names expressions refer to.
  for (const char* bad : {"", "2x", "a-b"}) {
    INFO("coordinate \"" << bad << "\"");
    Json j = rows();
    j["coords"] = Json{{bad, "num_tokens"}};
    expect_at(j.dump(), std::string("/coords/") + bad, "a coordinate named", "addr {file} --cache small row=0");
  }
}

TEST_CASE("catalogue: expressions", "[cli][errors][catalogue]") {
  run_cases({
      {"an unknown name", [](Json& j) { j["tensors"][0]["index"][3] = "heads"; }, "/tensors/0/index/3",
       "unknown name `heads`"},
      {"a coordinate in a size", [](Json& j) { j["tensors"][0]["shape"][0] = "kv + 1"; }, "/tensors/0/shape/0",
       "unknown name `kv`"},
      {"a table lookup outside an index", [](Json& j) { j["holds"] = "block_table[0] == 0"; }, "/holds",
       "a lookup in `block_table[...]`"},
      {"an expression that does not parse", [](Json& j) { j["tensors"][0]["index"][1] = "block_table[token /"; },
       "/tensors/0/index/1", "does not parse"},
      {"an integer where a truth value is expected", [](Json& j) { j["requires"] = Json::array({"block_size"}); },
       "/requires/0", "which is an integer; expected a truth value here"},
      {"a truth value where an integer is expected", [](Json& j) { j["tensors"][0]["index"][0] = "kv == 0"; },
       "/tensors/0/index/0", "which is a truth value; expected an integer here"},
      {"a mistyped operand", [](Json& j) { j["holds"] = "(kv == 0) + 1 > 0"; }, "/holds", "a well-typed expression"},
      {"is_pow2 of a coordinate in a domain (finding 15)", [](Json& j) { j["holds"] = "is_pow2(head + 1) || kv == 0"; },
       "/holds", "depends on the coordinate `head`"},
      {"is_pow2 of a coordinate in a view's domain", [](Json& j) { j["tensors"][0]["holds"] = "!is_pow2(token)"; },
       "/tensors/0/holds", "is_pow2 of an expression over parameters only"},
      {"an expression longer than the limit", [](Json& j) { j["params"]["big"] = std::string(5000, '1'); },
       "/params/big", "longer than 4096 characters"},
      {"an expression nested deeper than the limit", [](Json& j) {
         j["params"]["big"] = std::string(300, '(') + "1" + std::string(300, ')'); },
       "/params/big", "nesting deeper than 200"},
      {"a cyclic parameter definition", [](Json& j) { j["params"]["block_size"] = "num_blocks * 2"; },
       "/params/block_size", "cyclic parameter definition block_size -> num_blocks -> block_size"},
  });
  // is_pow2 of a parameter is fine: it is decided when the layout is bound.
  Json j = flash_nhd();
  j["requires"] = Json::array({"is_pow2(block_size)"});
  j["holds"] = "is_pow2(num_kv_heads) || head >= 0";
  expect_accepted(j);
}

TEST_CASE("catalogue: shapes, strides and orders", "[cli][errors][catalogue]") {
  run_cases({
      {"index count differs from the shape's rank", [](Json& j) { j["tensors"][0]["shape"].erase(0); },
       "/tensors/0/index", "found 5 index expressions; expected 4"},
      {"a stride order that is not a permutation", [](Json& j) {
         j["tensors"][0]["stride_order"] = Json::array({0, 0, 1, 2, 3}); },
       "/tensors/0/stride_order/1", "a permutation"},
      {"a stride order of the wrong length", [](Json& j) { j["tensors"][0]["stride_order"] = Json::array({0, 1, 2}); },
       "/tensors/0/stride_order", "found 3 axes"},
      {"both a stride order and strides", [](Json& j) {
         j["tensors"][0]["stride_order"] = Json::array({0, 1, 2, 3, 4});
         j["tensors"][0]["strides"] = Json::array({1, 1, 1, 1, 1}); },
       "/tensors/0/strides", "both \"stride_order\" and \"strides\""},
      {"strides of the wrong length", [](Json& j) { j["tensors"][0]["strides"] = Json::array({1, 1, 1, 1}); },
       "/tensors/0/strides", "found 4 strides"},
  });
}

TEST_CASE("catalogue: binding to a cache shape", "[cli][errors][catalogue]") {
  run_cases({
      {"division by zero", [](Json& j) { j["params"]["block_size"] = "head_size / (num_layers - 2)"; },
       "/params/block_size", "division by zero"},
      {"overflow", [](Json& j) { j["params"]["block_size"] = "num_tokens * 999999999999999999"; }, "/params/block_size",
       "64-bit overflow"},
      {"a zero extent", [](Json& j) { j["tensors"][0]["shape"][3] = "num_kv_heads - 4"; }, "/tensors/0/shape/3", "is 0"},
      {"a negative extent", [](Json& j) { j["tensors"][0]["shape"][3] = "num_kv_heads - 9"; }, "/tensors/0/shape/3",
       "is -5"},
      {"a negative stride", [](Json& j) {
         j["tensors"][0]["strides"] = Json::array({10240, 2048, 256, 16, "0 - 1"}); },
       "/tensors/0/strides/4", "a stride >= 0"},
      {"a negative view offset", [](Json& j) { j["tensors"][0]["offset"] = "0 - 1"; }, "/tensors/0/offset",
       "a view offset >= 0"},
      {"a zero table length", [](Json& j) { j["tables"]["block_table"]["length"] = 0; }, "/tables/block_table/length",
       "a positive table length"},
      {"a negative table start", [](Json& j) {
         j["tables"]["block_table"]["range"] = Json::array({"0 - 1", "num_blocks"}); },
       "/tables/block_table/range/0", "a range start >= 0"},
      {"a table range smaller than the table", [](Json& j) { j["tables"]["block_table"]["range"] = "num_blocks - 1"; },
       "/tables/block_table", "at least as many values as entries"},
      {"a table range beyond int32", [](Json& j) { j["tables"]["block_table"]["range"] = "4294967296"; },
       "/tables/block_table", "int32"},
      {"a table range ending at INT64_MIN (finding 03)", [](Json& j) {
         j["tables"]["block_table"]["range"] = Json::array({1, "-9223372036854775807 - 1"}); },
       "/tables/block_table", "on cache shape small"},
      {"strides that overflow", [](Json& j) { j["tensors"][0]["shape"][0] = 4611686018427387904; }, "/tensors/0/shape",
       "overflow"},
      {"a violated requirement (addr)", [](Json& j) { j["requires"] = Json::array({"head_size % 64 == 0"}); },
       "/requires/0", "`head_size % 64 == 0` is false (head_size = 16)"},
      {"an index that fails at the asked coordinate", [](Json& j) { j["tensors"][0]["index"][4] = "dim / (head - 1) * 0 + dim"; },
       "/tensors/0/index/4", "division by zero", "addr {file} --cache small layer=0 kv=0 token=0 head=1 dim=0"},
      {"a domain that fails at the asked coordinate", [](Json& j) { j["holds"] = "0 * (token / (head - 1)) == 0"; },
       "/holds", "division by zero", "addr {file} --cache small layer=0 kv=0 token=0 head=1 dim=0"},
  });
  // A coordinate extent that is not positive.
  Json j = rows();
  j["coords"]["row"] = "num_layers - 2";
  expect_at(j.dump(), "/coords/row", "a positive coordinate extent", "addr {file} --cache small row=0");
}

TEST_CASE("catalogue: cache shapes", "[cli][errors][catalogue]") {
  struct Case {
    const char* what;
    std::string text, path, part;
  };
  const std::string ok = R"("name": "c", "synthetic": true)";
  for (const Case& c :
       {Case{"an unknown parameter", "{" + ok + R"(, "params": {"num_layer": 2}})", "/params/num_layer",
             "an unknown cache-shape parameter \"num_layer\""},
        Case{"a zero parameter", "{" + ok + R"(, "params": {"num_layers": 0}})", "/params/num_layers", "a positive integer"},
        Case{"a parameter in [2^63, 2^64) (finding 05)", "{" + ok + R"(, "params": {"num_tokens": 18446744073709551615}})",
             "/params/num_tokens", "an integer in [-2^63, 2^63)"},
        Case{"a fractional parameter", "{" + ok + R"(, "params": {"num_tokens": 1.5}})", "/params/num_tokens",
             "the number 1.5"},
        Case{"no parameters", "{" + ok + "}", "/", "no member \"params\""},
        Case{"no citation", R"({"name": "c", "params": {"num_layers": 2}})", "/", "no \"cite\""},
        Case{"a name that is not the stem", R"({"name": "d", "synthetic": true, "params": {}})", "/name",
             "the file's stem \"c\""},
        Case{"an empty name", R"({"name": "", "synthetic": true, "params": {}})", "/name", "the empty string"},
        Case{"an unknown member", "{" + ok + R"(, "params": {}, "paramz": {}})", "/paramz", "an unknown member"}}) {
    INFO(c.what);
    TempDir dir;
    std::string cache = dir.write("c.json", c.text);
    CommandResult r = expect_bad_input("addr vllm-flash-nhd --cache '" + cache + "' " + kCoord, {c.part});
    CHECK_THAT(r.err, Catch::Contains("c.json: " + c.path + ": found "));
  }
  // A cache shape that lacks a parameter the layout reads (finding 09a): the message names the layout's file
  // and the JSON path that reads it, and the cache shape's file.
  TempDir dir;
  std::string cache = dir.write("no-heads.json", R"({"name": "no-heads", "synthetic": true,
      "params": {"num_layers": 2, "head_size": 16, "num_tokens": 67}})");
  CommandResult r = expect_bad_input("addr vllm-flash-nhd --cache '" + cache + "' " + kCoord,
                                     {"vllm-flash-nhd.json: /", "no-heads.json", "no parameter num_kv_heads"});
  // prove answers the same question as a grade: the pair is refused, the layout does not fit.
  r = run_kvlayout("prove vllm-flash-nhd vllm-flash-nhd --cache '" + cache + "'");
  check_contract(r);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("REFUSED") && Catch::Contains("does-not-fit"));
}

TEST_CASE("catalogue: command lines", "[cli][errors][catalogue]") {
  struct Case {
    std::string args, part;
  };
  const std::string at = std::string(" ") + kCoord;
  for (const Case& c : {
           Case{"addr vllm-flash-nhd --cache small --frobnicate", "unknown flag --frobnicate"},
           Case{"addr vllm-flash-nhd --cache", "--cache at the end of the line"},
           Case{"addr vllm-flash-nhd" + at, "no --cache"},
           Case{"addr --cache small", "no LAYOUT"},
           Case{"addr vllm-flash-nhx --cache small" + at, "no layout named \"vllm-flash-nhx\""},
           Case{"addr vllm-flash-nhd --cache smal" + at, "no cache shape named \"smal\""},
           Case{"addr vllm-flash-nhd --cache small layer=0 kv=0 token=67 head=0 dim=0", "expected 0 <= token < 67"},
           Case{"addr vllm-flash-nhd --cache small layer=0 kv=0 tokens=0 head=0 dim=0", "the coordinate name \"tokens\""},
           Case{"addr vllm-flash-nhd --cache small layer=0 kv=0 token=0 head=0", "no value for dim"},
           Case{"addr vllm-flash-nhd --cache small layer=0 layer=0 kv=0 token=0 head=0 dim=0", "layer given twice"},
           Case{"addr vllm-flash-nhd --cache small layer=0 kv=0 token=x head=0 dim=0", "the coordinate token \"x\""},
           Case{"addr vllm-flash-nhd --cache small --table block_table=0,1" + at, "--table block_table"},
           Case{"addr vllm-flash-nhd --cache small --table block_table=0,1,2,3,9" + at, "entry 4 = 9"},
           Case{"addr vllm-flash-nhd --cache small --table block_table=0,0,2,3,4" + at, "block_table"},
           Case{"addr vllm-flash-nhd --cache small --table nope=0" + at, "nope"},
           Case{"addr vllm-flash-nhd --cache small --param block_sz=32" + at, "--param block_sz"},
           Case{"addr vllm-flash-nhd --cache small --param block_size=x" + at, "--param block_size"},
           Case{"addr vllm-flash-nhd --cache small --param num_tokens=99999999999999999999" + at, "--param num_tokens"},
           Case{"prove vllm-flash-nhd --cache small", "1 layout argument(s)"},
           Case{"prove vllm-flash-nhd vllm-flash-hnd --cache small --limit-ms 0", "--limit-ms 0"},
           Case{"emit vllm-flash-nhd vllm-flash-hnd --cache small", "--target"},
           Case{"emit vllm-flash-nhd vllm-flash-hnd --cache small --target tpu", "--target"},
           Case{"emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --name 'not an identifier'", "--name"},
           Case{"emit vllm-flash-nhd vllm-flash-hnd --cache small --target cuda --naive", "--naive"},
           Case{"list --json extra", "no positional arguments"},
       }) {
    INFO(c.args);
    expect_bad_input(c.args, {c.part});
  }
  CommandResult r = run_kvlayout("frobnicate");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown command \"frobnicate\""));
}

TEST_CASE("catalogue: a pair the kernel generator cannot express (finding 09b)", "[cli][errors][catalogue]") {
  // The target holds a diagonal half of each (head, dim) square: a SUBSET, so emit proceeds to the planner,
  // which cannot express a domain that is not a box. The message names both files.
  Json j = flash_nhd();
  j["holds"] = "head + dim < 8";
  TempDir dir;
  std::string file = dir.write("mine.json", j.dump());
  CommandResult r = run_kvlayout("prove vllm-flash-nhd '" + file + "' --cache small");
  check_contract(r);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("SUBSET"));
  expect_bad_input("emit vllm-flash-nhd '" + file + "' --cache small --target cpu",
                   {"vllm-flash-nhd.json", "mine.json", "cannot express"});
}

TEST_CASE("catalogue: well-formed questions answered no carry their reason code", "[cli][errors][catalogue]") {
  // The README's reason codes: a grade (exit 0, 1 or 3), never exit 2 or 4.
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    bool mine_is_source;
    const char* other;
    int exit_code;
    std::string grade;
  };
  for (const Case& c : {
           Case{"exact", [](Json& j) {
                  j.erase("tables");  // unpaged: no padding
                  j["tensors"][0]["shape"] = Json::array({2, "num_tokens", "num_kv_heads", "head_size"});
                  j["tensors"][0]["index"] = Json::array({"kv", "token", "head", "dim"}); },
                true, "vllm-flash-nhd", 0, "EXACT_BYTE"},
           Case{"padding", [](Json& j) { j["tensors"][0]["strides"] = Json::array({20480, 4096, 256, 32, 1}); }, true,
                "vllm-flash-nhd", 0, "EXACT_TOKEN  [padding"},
           Case{"does-not-fit", [](Json& j) { j["requires"] = Json::array({"head_size % 64 == 0"}); }, true,
                "vllm-flash-nhd", 1, "REFUSED  [does-not-fit"},
           Case{"out-of-bounds", [](Json& j) { j["tensors"][0]["index"][3] = "head + 1"; }, false, "vllm-flash-nhd", 1,
                "REFUSED  [out-of-bounds"},
           Case{"collision", [](Json& j) { j["tensors"][0]["index"][3] = "head / 2"; }, false, "vllm-flash-nhd", 1,
                "REFUSED  [collision"},
           Case{"missing-positions", [](Json& j) { j["holds"] = "head < 2"; }, true, "vllm-flash-nhd", 1,
                "REFUSED  [missing-positions"},
           Case{"dropped-positions", [](Json& j) { j["holds"] = "head < 2"; }, false, "vllm-flash-nhd", 1,
                "SUBSET  [dropped-positions"},
           Case{"lossy-values", [](Json& j) { j["dtype"] = "fp8_e4m3"; }, false, "vllm-flash-nhd", 1,
                "NOT_EXACT  [lossy-values"},
           Case{"scale-mismatch", [](Json&) {}, true, "vllm-flash-nhd-fp8", 1, "NOT_EXACT  ["},
           Case{"content-mismatch", [](Json&) {}, true, "vllm-mla", 1, "REFUSED  [content-mismatch"},
       }) {
    INFO(c.what);
    Json j = flash_nhd();
    c.edit(j);
    TempDir dir;
    std::string file = "'" + dir.write("mine.json", j.dump()) + "'";
    std::string pair = c.mine_is_source ? file + " " + c.other : std::string(c.other) + " " + file;
    CommandResult r = run_kvlayout("prove " + pair + " --cache small");
    INFO(r.out << r.err);
    check_contract(r);
    CHECK(r.exit_code == c.exit_code);
    CHECK_THAT(r.out, Catch::Contains(c.grade));
  }
  CommandResult r = run_kvlayout("prove vllm-flash-nhd broken-collide --cache llama-3.1-70b --limit-ms 1");
  check_contract(r);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.out, Catch::Contains("solver-limit"));
}

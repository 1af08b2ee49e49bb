// The error catalogue, end to end: every class of bad input exits 2 with one message that names the file,
// the JSON path, what was found and what was expected — never a crash, a hang or a wrong answer.
#include <catch2/catch.hpp>

#include "spec/json_node.hpp"
#include "support/bad_input.hpp"
#include "support/temp_dir.hpp"

using kvlayout::spec::Json;
using kvlayout::test::expect_exit_2;
using kvlayout::test::flash_nhd;
using kvlayout::test::kCoord;
using kvlayout::test::run_kvlayout;
using kvlayout::test::TempDir;

TEST_CASE("bad input: malformed JSON", "[cli][errors]") {
  expect_exit_2("{\"name\": \"mine\",, }", {"malformed JSON at line 1 column", "expected a valid JSON document"});
}

TEST_CASE("bad input: a missing field", "[cli][errors]") {
  Json j = flash_nhd();
  j["tensors"][0].erase("shape");
  expect_exit_2(j.dump(), {"/tensors/0:", "no member \"shape\""});
}

TEST_CASE("bad input: an unknown dimension or parameter", "[cli][errors]") {
  Json j = flash_nhd();
  j["tensors"][0]["index"][3] = "heads";
  expect_exit_2(j.dump(), {"/tensors/0/index/3", "unknown name `heads`", "a logical coordinate (layer, kv, token, head, dim)"});
}

TEST_CASE("bad input: index count differs from the shape's rank", "[cli][errors]") {
  Json j = flash_nhd();
  j["tensors"][0]["shape"].erase(0);
  expect_exit_2(j.dump(), {"/tensors/0/index", "found 5 index expressions; expected 4"});
}

TEST_CASE("bad input: division by zero", "[cli][errors]") {
  Json j = flash_nhd();
  j["params"]["block_size"] = "head_size / (num_layers - 2)";
  expect_exit_2(j.dump(), {"/params/block_size", "division by zero"});
}

TEST_CASE("bad input: overflow", "[cli][errors]") {
  Json j = flash_nhd();
  j["params"]["block_size"] = "num_tokens * 999999999999999999";
  expect_exit_2(j.dump(), {"/params/block_size", "64-bit overflow"});
}

TEST_CASE("bad input: a negative or zero extent", "[cli][errors]") {
  Json j = flash_nhd();
  j["tensors"][0]["shape"][3] = "num_kv_heads - 4";
  expect_exit_2(j.dump(), {"/tensors/0/shape/3", "is 0", "a positive extent"});
  j["tensors"][0]["shape"][3] = "num_kv_heads - 9";
  expect_exit_2(j.dump(), {"/tensors/0/shape/3", "is -5"});
}

TEST_CASE("bad input: cyclic parameter definitions", "[cli][errors]") {
  Json j = flash_nhd();
  j["params"]["block_size"] = "num_blocks * 2";
  expect_exit_2(j.dump(), {"/params/", "cyclic parameter definition"});
}

TEST_CASE("bad input: a violated requirement", "[cli][errors]") {
  Json j = flash_nhd();
  j["requires"] = Json::array({"head_size % 64 == 0"});
  expect_exit_2(j.dump(), {"/requires/0", "does not fit cache shape small", "`head_size % 64 == 0` is false (head_size = 16)"});
  auto r = run_kvlayout(std::string("addr broken-nofit --cache small ") + kCoord);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("broken-nofit.json: /requires/0"));
}

TEST_CASE("bad input: a missing citation", "[cli][errors]") {
  Json j = flash_nhd();
  j.erase("cite");
  expect_exit_2(j.dump(), {"mine.json: /: found no \"cite\"", "\"control\": true"});
}

TEST_CASE("bad input: a coordinate out of range, unknown, repeated or missing", "[cli][errors]") {
  std::string text = flash_nhd().dump();
  TempDir dir;
  std::string file = dir.write("mine.json", text);
  struct Case {
    const char* coords;
    const char* message;
  };
  for (Case c : {Case{"layer=0 kv=0 token=67 head=0 dim=0", "token=67; expected 0 <= token < 67"},
                 Case{"layer=0 kv=2 token=0 head=0 dim=0", "kv=2; expected 0 <= kv < 2"},
                 Case{"layer=-1 kv=0 token=0 head=0 dim=0", "layer=-1"},
                 Case{"layer=0 kv=0 tokens=0 head=0 dim=0", "the coordinate name \"tokens\""},
                 Case{"layer=0 kv=0 token=0 head=0", "no value for dim"},
                 Case{"layer=0 layer=0 kv=0 token=0 head=0 dim=0", "layer given twice"},
                 Case{"layer=0 kv=0 token=x head=0 dim=0", "the coordinate token \"x\""}}) {
    auto r = run_kvlayout("addr '" + file + "' --cache small " + c.coords);
    INFO(c.coords << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}

TEST_CASE("bad input: an unknown layout or cache name", "[cli][errors]") {
  auto r = run_kvlayout(std::string("addr vllm-flash-nhx --cache small ") + kCoord);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no layout named \"vllm-flash-nhx\"") && Catch::Contains("vllm-flash-nhd"));
  r = run_kvlayout(std::string("addr vllm-flash-nhd --cache smal ") + kCoord);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no cache shape named \"smal\"") && Catch::Contains("small"));
  r = run_kvlayout(std::string("addr vllm-flash-nhd ") + kCoord);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no --cache"));
}

TEST_CASE("bad input: flags, tables and parameters on the command line", "[cli][errors]") {
  struct Case {
    const char* args;
    const char* message;
  };
  for (Case c : {Case{"addr vllm-flash-nhd --cache small --frobnicate", "unknown flag --frobnicate"},
                 Case{"addr vllm-flash-nhd --cache", "--cache at the end of the line"},
                 Case{"addr vllm-flash-nhd --cache small --table block_table=0,1 layer=0 kv=0 token=1 head=0 dim=0",
                      "--table block_table: found 2 entries; expected 5 entries"},
                 Case{"addr vllm-flash-nhd --cache small --table block_table=0,1,2,3,9 layer=0 kv=0 token=1 head=0 dim=0",
                      "entry 4 = 9; expected a value in [0, 5)"},
                 Case{"addr vllm-flash-nhd --cache small --table block_table=0,a,2 layer=0 kv=0 token=1 head=0 dim=0",
                      "block_table entry \"a\""},
                 Case{"addr vllm-flash-nhd --cache small --param block_sz=32 layer=0 kv=0 token=1 head=0 dim=0",
                      "--param block_sz"},
                 Case{"addr vllm-flash-nhd --cache small --param block_size=8 layer=0 kv=0 token=1 head=0 dim=0",
                      "`block_size % 16 == 0` is false (block_size = 8)"},
                 Case{"list --json extra", "no positional arguments"}}) {
    auto r = run_kvlayout(c.args);
    INFO(c.args << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}

TEST_CASE("bad input: a cross-check shape too large to enumerate", "[cli][errors]") {
  auto r = run_kvlayout("matrix --cross-check llama-3.1-70b --jobs 2");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("llama-3.1-70b.json") && Catch::Contains("at most 2097152 positions per layout"));
}

// Regression tests for the robustness findings (issue 8): each reproducer of tests/data/findings/<folder>/ run
// with the commands of its report, asserting the answer the issue expects. Bad input is exit 2 naming the file
// and the JSON path; a declaration whose offsets wrap around int64 is refused (exit 1, out-of-bounds) or bad
// input (exit 2) -- never EXACT; no command crashes or exits 4.
#include <catch2/catch.hpp>
#include <string>

#include "support/bad_input.hpp"

using kvlayout::test::check_contract;
using kvlayout::test::CommandResult;
using kvlayout::test::run_command;
using kvlayout::test::run_kvlayout;

namespace {

std::string data(const std::string& relative) {
  return "'" + std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/findings/" + relative + "'";
}

const std::string kSpecs = std::string(" --specs '") + KVLAYOUT_SPECS_DIR + "'";

CommandResult run(const std::string& arguments) {
  CommandResult r = run_kvlayout(arguments + kSpecs);
  INFO("kvlayout " << arguments << "\nexit " << r.exit_code << "\nstdout: " << r.out.substr(0, 3000)
                   << "\nstderr: " << r.err.substr(0, 3000));
  check_contract(r);
  return r;
}

// Exit 2 naming `file` (a file name) and the JSON `path` of the failing member or expression.
CommandResult expect_path(const std::string& arguments, const std::string& file, const std::string& path) {
  CommandResult r = run(arguments);
  INFO("kvlayout " << arguments << "\nstdout: " << r.out.substr(0, 3000) << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(file + ": " + path + ": found "));
  return r;
}

// prove or emit on a declaration whose offsets wrap: REFUSED for out-of-bounds (exit 1), or bad input (exit 2).
void expect_refused_out_of_bounds(const std::string& arguments) {
  CommandResult r = run(arguments);
  INFO("kvlayout " << arguments << "\nstdout: " << r.out.substr(0, 3000) << "\nstderr: " << r.err);
  CHECK((r.exit_code == 1 || r.exit_code == 2));
  if (r.exit_code == 1) CHECK_THAT(r.out + r.err, Catch::Contains("REFUSED") && Catch::Contains("out-of-bounds"));
}

// addr on such a declaration: out of bounds (exit 1) or bad input (exit 2), never an address in bounds.
void expect_not_in_bounds(const std::string& arguments) {
  CommandResult r = run(arguments);
  INFO("kvlayout " << arguments << "\nstdout: " << r.out << "\nstderr: " << r.err);
  CHECK((r.exit_code == 1 || r.exit_code == 2));
  if (r.exit_code == 1) CHECK_THAT(r.out, Catch::Contains("OUT OF BOUNDS"));
}

const char* kEmitCpu = " --cache small --target cpu";

}  // namespace

TEST_CASE("finding 01: an in-bounds proof whose last offset overflows int64 is not EXACT", "[cli][findings]") {
  const std::string dir = "01-inbounds-offset-overflow-exact/";
  for (const char* f : {"ovf.json", "viewoff.json"}) {
    INFO(f);
    expect_refused_out_of_bounds("prove vllm-flash-nhd " + data(dir + f) + " --cache small");
    expect_refused_out_of_bounds("emit vllm-flash-nhd " + data(dir + f) + kEmitCpu);
  }
  expect_refused_out_of_bounds("prove " + data(dir + "pad5.json") + " " + data(dir + "pad5.json") + " --cache small");
  expect_not_in_bounds("addr " + data(dir + "ovf.json") + " --cache small layer=0 kv=0 token=0 head=1 dim=0");
  expect_not_in_bounds("addr " + data(dir + "viewoff.json") + " --cache small layer=0 kv=0 token=0 head=0 dim=0");
}

TEST_CASE("finding 02: an index that fails at some position is bad input naming its path", "[cli][findings]") {
  const std::string dir = "02-index-eval-failure-crash/";
  struct Case {
    const char* file;
    const char* path;
  };
  for (Case c : {Case{"div0.json", "/tensors/0/index/4"}, Case{"div0b.json", "/tensors/0/index/4"},
                 Case{"ceil0.json", "/tensors/0/index/4"}, Case{"ovfidx.json", "/tensors/0/index/2"}}) {
    INFO(c.file);
    std::string f = data(dir + c.file);
    expect_path("prove " + f + " " + f + " --cache small", c.file, c.path);
    expect_path("prove " + f + " vllm-flash-nhd --cache small", c.file, c.path);
    expect_path("prove vllm-flash-nhd " + f + " --cache small", c.file, c.path);
    expect_path("emit vllm-flash-nhd " + f + kEmitCpu, c.file, c.path);
  }
  // bigidx.json's index is the constant 2^62: it evaluates everywhere but lies past its axis (extent 2) and its
  // offset wraps int64 -- refused as out of bounds, or bad input naming the index.
  std::string big = data(dir + "bigidx.json");
  for (const std::string& command : {"prove " + big + " " + big + " --cache small", "prove " + big + " vllm-flash-nhd --cache small",
                                     "prove vllm-flash-nhd " + big + " --cache small", "emit vllm-flash-nhd " + big + kEmitCpu}) {
    CommandResult r = run(command);
    INFO(command << "\n" << r.out.substr(0, 3000) << r.err);
    CHECK((r.exit_code == 1 || r.exit_code == 2));
    if (r.exit_code == 1) CHECK_THAT(r.out + r.err, Catch::Contains("REFUSED") && Catch::Contains("out-of-bounds"));
    else CHECK_THAT(r.err, Catch::Contains("bigidx.json: /tensors/0/index/0"));
  }
  expect_path("addr " + data(dir + "div0b.json") + " --cache small layer=0 kv=0 token=0 head=1 dim=0", "div0b.json",
              "/tensors/0/index/4");
  expect_path("addr " + data(dir + "ovfidx.json") + " --cache small layer=0 kv=0 token=1 head=0 dim=1", "ovfidx.json",
              "/tensors/0/index/2");
}

TEST_CASE("finding 03: a table range ending at INT64_MIN is bad input naming the table", "[cli][findings]") {
  std::string f = data("03-table-range-overflow-exit4/rng.json");
  expect_path("prove " + f + " vllm-flash-nhd --cache small", "rng.json", "/tables/block_table");
  expect_path("addr " + f + " --cache small layer=0 kv=0 token=0 head=0 dim=0", "rng.json", "/tables/block_table");
  expect_path("emit " + f + " vllm-flash-nhd" + kEmitCpu, "rng.json", "/tables/block_table");
}

TEST_CASE("finding 04: a cache shape with 2^62 layers is bad input or a non-exact grade, never exit 4",
          "[cli][findings]") {
  std::string cache = data("04-cache-huge-num-layers-exit4/huge-layers.json");
  for (const std::string& command : {"prove vllm-flash-nhd vllm-flash-nhd --cache " + cache,
                                     "emit vllm-flash-nhd vllm-flash-nhd --cache " + cache + " --target cpu"}) {
    CommandResult r = run(command);
    INFO(command << "\n" << r.out.substr(0, 2000) << r.err);
    CHECK((r.exit_code == 1 || r.exit_code == 2));
    if (r.exit_code == 2) CHECK_THAT(r.err, Catch::Contains("huge-layers.json"));
  }
  CommandResult r = run("addr vllm-flash-nhd --cache " + cache + " layer=0 kv=0 token=0 head=0 dim=0");
  CHECK((r.exit_code == 0 || r.exit_code == 2));
}

TEST_CASE("finding 05: a JSON integer from 2^63 to 2^64 - 1 is bad input, not a negative number", "[cli][findings]") {
  std::string f = data("05-u64-json-integer-wraps/u64p.json");
  CommandResult r = expect_path("prove " + f + " vllm-flash-nhd --cache small", "u64p.json", "/params/big");
  CHECK_THAT(r.err, Catch::Contains("18446744073709551615") && Catch::Contains("expected an integer in [-2^63, 2^63)"));
}

TEST_CASE("finding 06: a domain that divides by zero at some position is bad input naming /holds", "[cli][findings]") {
  const std::string dir = "06-holds-div-by-zero-proved-exact/";
  for (const char* file : {"holdsdiv.json", "holdsdiv2.json"}) {
    INFO(file);
    std::string f = data(dir + file);
    expect_path("prove vllm-flash-nhd " + f + " --cache small", file, "/holds");
    expect_path("prove " + f + " vllm-flash-nhd --cache small", file, "/holds");
    expect_path("prove " + f + " " + f + " --cache small", file, "/holds");
    expect_path("addr " + f + " --cache small layer=0 kv=0 token=0 head=1 dim=0", file, "/holds");
  }
}

TEST_CASE("finding 07: 100000-deep JSON followed by a member is bad input under the default 8 MiB stack",
          "[cli][findings]") {
  std::string f = data("07-deep-json-nesting-segv/deep-100000.json");
  for (const std::string& command : {"addr " + f + " --cache small layer=0", "prove " + f + " vllm-flash-nhd --cache small",
                                     "emit vllm-flash-nhd " + f + kEmitCpu}) {
    INFO(command);
    CommandResult r = run_command("ulimit -s 8192 2>/dev/null; '" + std::string(KVLAYOUT_BINARY) + "' " + command + kSpecs);
    check_contract(r);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("deep-100000.json: /description/0/0") &&
                          Catch::Contains("nesting deeper than 64 levels"));
  }
}

TEST_CASE("finding 08: an index dividing by the constant 0 is bad input naming its path", "[cli][findings]") {
  const std::string dir = "08-index-div-by-constant-zero-exit4/";
  for (const char* file : {"div0c.json", "mod0c.json", "cdiv0.json"}) {
    INFO(file);
    std::string f = data(dir + file);
    expect_path("prove " + f + " vllm-flash-nhd --cache small", file, "/tensors/0/index/4");
    expect_path("prove vllm-flash-nhd " + f + " --cache small", file, "/tensors/0/index/4");
    expect_path("emit vllm-flash-nhd " + f + kEmitCpu, file, "/tensors/0/index/4");
    expect_path("addr " + f + " --cache small layer=0 kv=0 token=1 head=0 dim=1", file, "/tensors/0/index/4");
  }
}

TEST_CASE("finding 09: exit-2 messages name the files and a JSON path", "[cli][findings]") {
  const std::string dir = "09-exit2-message-without-json-path/";
  // (a) the cache shape lacks a parameter the layout reads.
  CommandResult r = run("addr vllm-flash-nhd --cache " + data(dir + "no-heads.json") + " layer=0 kv=0 token=0 head=0 dim=0");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("vllm-flash-nhd.json: /") && Catch::Contains("no-heads.json") &&
                        Catch::Contains("num_kv_heads"));
  r = run("prove vllm-flash-nhd vllm-flash-nhd --cache " + data(dir + "no-heads.json"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("does-not-fit"));
  // (b) emit of a pair it cannot take: a message naming both files ("cannot express"), or the file and the
  // path of the domain that fails (once prove refuses a domain dividing by zero, finding 06).
  r = run("emit vllm-flash-nhd " + data(dir + "holdsdiv2.json") + kEmitCpu);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("holdsdiv2.json"));
  CHECK_THAT(r.err, Catch::Contains("vllm-flash-nhd.json -> ") || Catch::Contains("holdsdiv2.json: /"));
}

TEST_CASE("finding 10: \"per\": \"\" is bad input naming /tensors/0/per", "[cli][findings]") {
  std::string f = data("10-per-empty-string-accepted/per-empty.json");
  expect_path("addr " + f + " --cache small layer=1 kv=0 token=0 head=0 dim=0", "per-empty.json", "/tensors/0/per");
  expect_path("prove " + f + " " + f + " --cache small", "per-empty.json", "/tensors/0/per");
}

TEST_CASE("finding 11: byte offsets beyond int64 are refused or bad input, never exit 4", "[cli][findings]") {
  std::string f = data("11-byte-offset-overflow-exit4/bytes-ovf.json");
  expect_not_in_bounds("addr " + f + " --cache small layer=0 kv=1 token=0 head=0 dim=0");
  expect_refused_out_of_bounds("prove " + f + " " + f + " --cache small");
  expect_refused_out_of_bounds("prove vllm-flash-nhd " + f + " --cache small");
  expect_refused_out_of_bounds("emit vllm-flash-nhd " + f + kEmitCpu);
}

TEST_CASE("finding 12: the matrix cross-check of a huge allocation is not an internal error", "[cli][findings]") {
  std::string specs = data("12-matrix-crosscheck-bad-alloc/specs");
  CommandResult r = run_kvlayout("matrix --specs " + specs + " --cache small --cross-check small --jobs 1 --no-group-rows");
  INFO(r.out.substr(0, 3000) << r.err);
  check_contract(r);
  CHECK(r.exit_code != 4);
  r = run_kvlayout("prove huge-alloc huge-alloc --cache small --specs " + specs);
  check_contract(r);
}

TEST_CASE("finding 13: a target whose byte size overflows is refused or bad input", "[cli][findings]") {
  std::string f = data("13-emit-target-bytes-signed-overflow/big-view-alloc.json");
  expect_refused_out_of_bounds("emit vllm-flash-nhd " + f + kEmitCpu);
  expect_refused_out_of_bounds("prove vllm-flash-nhd " + f + " --cache small");
}

TEST_CASE("finding 14: one custom content with different coordinate extents is not EXACT", "[cli][findings]") {
  const std::string dir = "14-content-extent-mismatch-exact/";
  CommandResult r = run("prove " + data(dir + "s02439.json") + " " + data(dir + "t02439.json") + " --cache small");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("REFUSED") || Catch::Contains("SUBSET"));
  CHECK_THAT(r.out, !Catch::Contains("EXACT_BYTE") && !Catch::Contains("EXACT_TOKEN"));
}

TEST_CASE("finding 15: is_pow2 of a coordinate is bad input naming /holds", "[cli][findings]") {
  std::string f = data("15-is-pow2-in-holds-exit4/s04578.json");
  CommandResult r = expect_path("prove " + f + " " + f + " --cache small", "s04578.json", "/holds");
  CHECK_THAT(r.err, Catch::Contains("is_pow2"));
}

TEST_CASE("finding 16: one axis with stride 2^63-1 is not EXACT", "[cli][findings]") {
  const std::string dir = "16-overflow-exact-small/";
  expect_refused_out_of_bounds("prove " + data(dir + "s00537.json") + " " + data(dir + "t00537.json") + " --cache small");
  expect_not_in_bounds("addr " + data(dir + "t00537.json") + " --cache small y=1");
}

#include "support/bad_input.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

namespace kvlayout::test {

spec::Json flash_nhd() {
  return spec::Json::parse(R"J({
    "name": "mine", "engine": "my engine", "cite": {"repo": "o/r", "path": "p.py", "symbol": "f", "version": "1"},
    "content": "kv-heads", "dtype": "bf16",
    "params": {"block_size": 16, "num_blocks": "ceil_div(num_tokens, block_size)"},
    "tables": {"block_table": {"length": "num_blocks", "range": "num_blocks"}},
    "tensors": [{"name": "kv_cache", "per": "layer",
      "shape": [2, "num_blocks", "block_size", "num_kv_heads", "head_size"],
      "index": ["kv", "block_table[token / block_size]", "token % block_size", "head", "dim"]}]
  })J");
}

const char* const kCoord = "layer=0 kv=0 token=1 head=0 dim=0";

void check_contract(const CommandResult& r) {
  INFO("exit " << r.exit_code << "\nstdout: " << r.out.substr(0, 2000) << "\nstderr: " << r.err.substr(0, 2000));
  CHECK(r.exit_code >= 0);
  CHECK(r.exit_code < 4);  // 4 is an internal error; 128 + N a signal (a crash)
  if (r.exit_code == 2) {
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::StartsWith("kvlayout ") && Catch::Contains(": error: "));
  }
}

CommandResult expect_bad_input(const std::string& arguments, std::initializer_list<std::string> parts) {
  CommandResult r = run_kvlayout(arguments);
  INFO("kvlayout " << arguments << "\nstdout: " << r.out.substr(0, 2000) << "\nstderr: " << r.err.substr(0, 2000));
  check_contract(r);
  CHECK(r.exit_code == 2);
  for (const auto& p : parts) CHECK_THAT(r.err, Catch::Contains(p));
  return r;
}

void expect_exit_2(const std::string& text, std::initializer_list<std::string> parts, const std::string& coord) {
  TempDir dir;
  std::string file = dir.write("mine.json", text);
  CommandResult r = expect_bad_input("addr '" + file + "' --cache small " + coord, parts);
  CHECK_THAT(r.err, Catch::StartsWith("kvlayout addr: error: "));
  CHECK_THAT(r.err, Catch::Contains("mine.json"));
}

}  // namespace kvlayout::test

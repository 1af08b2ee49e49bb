// Reproducers of what check_input_fuzz (fuzz/check_input_fuzz.cpp) found in the inputs of `kvlayout check`
// and `kvlayout plan check`, each now bad input (exit 2, a SpecError) rather than an internal error (exit 4).
#include <catch2/catch.hpp>

#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::test::run_kvlayout;
using kvlayout::test::TempDir;

TEST_CASE("plan check: a number beyond a double in the plan is bad input, not an internal error", "[fuzz-findings]") {
  // nlohmann's parser throws out_of_range (not parse_error) for 7e0000100000 = 7 x 10^100000: the CLI
  // caught only parse_error, so the plan reached main's catch-all and exited 4.
  TempDir dir;
  const std::string plan = dir.write("overflow.json", R"({"form": "descriptors", "target_regions": 7e0000100000})");
  auto r = run_kvlayout("plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small --plan " + plan);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("overflow.json"));
  CHECK_THAT(r.err, Catch::Contains("number overflow"));
  // The control: the same plan with an ordinary number gets past the parser (and fails on the field).
  const std::string plain = dir.write("plain.json", R"({"form": "descriptors", "target_regions": 7})");
  auto p = run_kvlayout("plan check vllm-flash-nhd vllm-flashinfer-nhd --cache small --plan " + plain);
  CHECK(p.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("plain.json: /source_regions"));
}

#include <catch2/catch.hpp>

#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout emit refuses pairs that are not exact or a subset, printing grade and reason", "[cli][emit]") {
  auto refused = run_kvlayout("emit vllm-flash-nhd-tp2-r0 vllm-flash-nhd --cache small --target cpu");
  CHECK(refused.exit_code == 1);
  CHECK(refused.out.empty());
  CHECK_THAT(refused.err, Catch::Contains("REFUSED [missing-positions]") && Catch::Contains("unblocked by: gather"));
  auto lossy = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-fp8 --cache small --target cpu");
  CHECK(lossy.exit_code == 1);
  CHECK_THAT(lossy.err, Catch::Contains("NOT_EXACT [lossy-values]") && Catch::Contains("--allow-not-exact"));
  auto allowed = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-fp8 --cache small --target cpu --allow-not-exact");
  CHECK(allowed.exit_code == 0);
  CHECK_THAT(allowed.out, Catch::Contains("NOT EXACT    emitted with --allow-not-exact") && Catch::Contains("kv_convert"));
  auto subset = run_kvlayout("emit vllm-flash-nhd vllm-flash-nhd-tp2-r0 --cache small --target cuda");
  CHECK(subset.exit_code == 0);
  CHECK_THAT(subset.out, Catch::Contains("__global__"));
}

TEST_CASE("kvlayout emit writes -o FILE and rejects bad flags with exit 2", "[cli][emit]") {
  kvlayout::test::TempDir dir;
  std::string out = (dir.path() / "k.cpp").string();
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --name my_move -o '" + out + "'").exit_code == 0);
  auto compiled = kvlayout::test::run_command("g++ -std=c++17 -fsyntax-only '" + out + "'");
  CHECK(compiled.exit_code == 0);
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small").exit_code == 2);
  CHECK(run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target tpu").exit_code == 2);
  auto name = run_kvlayout("emit vllm-flash-nhd vllm-flash-hnd --cache small --target cpu --name 'a-b'");
  CHECK(name.exit_code == 2);
  CHECK_THAT(name.err, Catch::Contains("--name") && Catch::Contains("a C identifier"));
  CHECK(run_kvlayout("emit --help").exit_code == 0);
}

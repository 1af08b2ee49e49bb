// Progress goes to a terminal only: piped, a command's stderr stays empty (and stdout its answer).
#include <catch2/catch.hpp>

#include "cli/progress.hpp"
#include "support/run_command.hpp"

TEST_CASE("durations read as a person says them", "[cli][progress]") {
  using kvlayout::cli::format_duration;
  CHECK(format_duration(4.4) == "4 s");
  CHECK(format_duration(130) == "2 min 10 s");
  CHECK(format_duration(3780) == "1 h 3 min");
}

TEST_CASE("a proof in a pipe prints no progress", "[cli][progress]") {
  auto r = kvlayout::test::run_kvlayout("prove vllm-flash-nhd sglang-mha --cache small");
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  // Under `script` (a terminal) the same proof reports obligations done / total on stderr.
  auto tty = kvlayout::test::run_command("script -qec '" KVLAYOUT_BINARY " prove vllm-flash-nhd sglang-mha --cache small' /dev/null");
  if (tty.exit_code != 127) CHECK_THAT(tty.out, Catch::Contains("prove vllm-flash-nhd -> sglang-mha: ") && Catch::Contains("/"));
}

// --against: a sweep's pairs read against an earlier sweep's, the unchanged kernels giving the drift.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "bench/sweep_against.hpp"

namespace kvlayout {
namespace {

spec::Json row(const std::string& source, const std::string& digest, double one_thread, double two_threads, bool headline = false) {
  spec::Json r = {{"cache", "llama-3.1-8b"}, {"source", source}, {"target", "t"}, {"headline", headline}};
  if (!digest.empty()) r["kernel_digest"] = digest;
  r["threads"]["1"] = {{"ratio", one_thread}};
  r["threads"]["2"] = {{"ratio", two_threads}};
  return r;
}

spec::Json sweep(const spec::Json& rows) { return spec::Json{{"mib", 256}, {"pairs", rows}}; }

}  // namespace

TEST_CASE("the sweep against an earlier one: unchanged kernels give the drift, changed ones are read against it", "[bench][against]") {
  // Then: four pairs. Now: the machine is 0.9x as fast (a and b unchanged), c's kernel changed and reads
  // 1.2x its old ratio, d is new, and a headline row is left out.
  const spec::Json then = sweep({row("a", "A", 1.0, 1.0), row("b", "B", 0.85, 0.9), row("c", "C", 0.7, 0.8), row("e", "E", 0.5, 0.5)});
  const spec::Json now = spec::Json::array({row("a", "A", 0.9, 0.9), row("b", "B", 0.765, 0.81), row("c", "C2", 0.84, 0.96),
                                            row("d", "D", 0.6, 0.6), row("a", "A", 0.1, 0.1, true)});
  const bench::Against a = bench::compare_against(now, then);
  CHECK(a.new_pairs == 1);
  for (const int n : {1, 2}) {
    const bench::AgainstThreads& t = a.threads.at(n);
    CHECK(t.unchanged.pairs == 2);
    CHECK(t.unchanged.geometric_mean == Approx(0.9));
    CHECK(t.changed.pairs == 1);
    CHECK(t.changed.geometric_mean == Approx(1.2));
    CHECK(t.changed_over_drift == Approx(1.2 / 0.9));
    CHECK(t.unknown.pairs == 0);
  }
  // Under 0.8x now: b (0.765), d at one thread; at the reference's state (over 0.9) b reads 0.85, d 0.67.
  CHECK(a.threads.at(1).below_0_8 == 2);
  CHECK(a.threads.at(1).below_0_8_at_reference_state == 1);
  REQUIRE(a.changed.size() == 1);
  CHECK(a.changed[0].name == "llama-3.1-8b c -> t");
  CHECK(a.changed[0].over_drift.at(1) == Approx(1.2 / 0.9));
  const spec::Json j = bench::against_json(a);
  CHECK(j["1"]["changed_over_drift"].get<double>() == Approx(1.2 / 0.9));
  CHECK(j["changed_pairs"].size() == 1);
}

TEST_CASE("the sweep against an earlier one: a reference without digests is neither drift nor change", "[bench][against]") {
  const spec::Json then = sweep({row("a", "", 1.0, 1.0), row("b", "", 0.8, 0.8)});
  const spec::Json now = spec::Json::array({row("a", "A", 0.9, 0.9), row("b", "B", 0.8, 0.8)});
  const bench::Against a = bench::compare_against(now, then);
  CHECK(a.threads.at(1).unknown.pairs == 2);
  CHECK(a.threads.at(1).unknown.geometric_mean == Approx(std::sqrt(0.9)));
  CHECK(a.threads.at(1).unchanged.pairs == 0);
  CHECK(a.threads.at(1).changed.pairs == 0);
  CHECK(a.threads.at(1).changed_over_drift == 1);
  CHECK(a.changed.empty());
  // control: the same pairs with digests in both split into unchanged (a) and changed (b)
  const bench::Against with = bench::compare_against(now, sweep({row("a", "A", 1.0, 1.0), row("b", "X", 0.8, 0.8)}));
  CHECK(with.threads.at(1).unchanged.pairs == 1);
  CHECK(with.threads.at(1).changed.pairs == 1);
}

TEST_CASE("the sweep against an earlier one refuses what is not a sweep's JSON, naming the path", "[bench][against]") {
  CHECK_THROWS_WITH(bench::compare_against(spec::Json::array(), spec::Json{{"mib", 256}}), Catch::Contains("/pairs: expected the array"));
  CHECK_THROWS_WITH(bench::compare_against(spec::Json::array(), sweep(spec::Json::array({spec::Json{{"cache", "c"}, {"source", "s"}}}))),
                    Catch::Contains("/pairs/0: expected a field 'target'"));
  CHECK_NOTHROW(bench::compare_against(spec::Json::array(), sweep(spec::Json::array())));
}

}  // namespace kvlayout

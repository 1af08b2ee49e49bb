// defined(side): a declaration whose domain or index fails to evaluate anywhere on the cache shape is bad
// input (SpecError, exit 2) before any obligation runs — with the normaliser and with the solver alone —
// and a guarded expression the evaluator never fails on is accepted. This is defined's control: the
// registry has no known-bad shipped pair for it, since failing it is an error, not a grade.
#include <catch2/catch.hpp>
#include <algorithm>

#include "layout/layout_fixture.hpp"
#include "prove/obligation_registry.hpp"
#include "prove/prove_fixture.hpp"
#include "spec/catalog.hpp"
#include "spec/error.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;
using kvlayout::test::flash_nhd_declaration;
using kvlayout::test::small_cache;
using kvlayout::test::TempDir;

namespace {

prove::Proof prove_inline(const TempDir& dir, const spec::Json& declaration, bool normalise) {
  auto decl = spec::load_layout(dir.write("case.json", declaration.dump(2)));
  prove::ProveOptions options;
  options.normalise = normalise;
  return prove::prove(decl, decl, small_cache(), options);
}

spec::Json with_index(const std::string& dim_index) {
  spec::Json j = flash_nhd_declaration();
  j["tensors"][0]["index"][4] = dim_index;
  return j;
}

spec::Json with_holds(const std::string& holds) {
  spec::Json j = flash_nhd_declaration();
  j["tensors"][0]["holds"] = holds;
  return j;
}

}  // namespace

TEST_CASE("every shipped declaration is defined by interval analysis alone", "[prove][defined]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  for (const auto& file : catalog.layout_files()) {
    const std::string name = file.stem().string();
    INFO(name);
    const bool mla = name.find("mla") != std::string::npos;
    prove::Proof p = test::prove_named(name, name, mla ? "deepseek-v3" : "llama-3.1-70b");
    const auto* d = test::find_obligation(p, "defined", prove::Side::Source);
    if (!p.source_bound->fits()) continue;
    REQUIRE(d);
    CHECK(d->status == prove::Status::Proved);
    CHECK(d->method == "interval analysis");
  }
}

TEST_CASE("an expression failing at some position is bad input naming its path and a coordinate", "[prove][defined]") {
  TempDir dir;
  struct Case {
    spec::Json declaration;
    const char* path;
    const char* failure;
  };
  for (const Case& c : {Case{with_index("dim + 0 * (token % (head - 1))"), "/tensors/0/index/4", "modulo by zero"},
                        Case{with_index("dim / 0"), "/tensors/0/index/4", "division by zero"},
                        Case{with_index("dim + ceil_div(0, head - 1) * 0"), "/tensors/0/index/4", "division by zero"},
                        Case{with_index("dim + (token % 16) * 3037000500 * 3037000500"), "/tensors/0/index/4", "overflow"},
                        Case{with_holds("0 * (token / (head - 1)) == 0"), "/tensors/0/holds", "division by zero"},
                        Case{with_holds("token / (head - 1) >= 0"), "/tensors/0/holds", "division by zero"}}) {
    for (bool normalise : {true, false}) {
      INFO(c.declaration["tensors"][0].dump() << (normalise ? " (normaliser on)" : " (solver alone)"));
      try {
        prove_inline(dir, c.declaration, normalise);
        FAIL("graded instead of refused as bad input");
      } catch (const spec::SpecError& e) {
        CHECK(e.path == c.path);
        CHECK_THAT(e.found, Catch::Contains("fails at (") && Catch::Contains(c.failure));
      }
    }
  }
}

TEST_CASE("a guarded division the evaluator never reaches with a zero divisor is defined, by the solver", "[prove][defined]") {
  TempDir dir;
  // && short-circuits in the evaluator, so head - 1 is never 0 where the division runs.
  for (bool normalise : {true, false}) {
    INFO((normalise ? "normaliser on" : "solver alone"));
    prove::Proof p = prove_inline(dir, with_holds("head == 1 || token / (head - 1) >= 0"), normalise);
    const auto* d = test::find_obligation(p, "defined", prove::Side::Source);
    REQUIRE(d);
    CHECK(d->status == prove::Status::Proved);
    CHECK_THAT(d->method, Catch::Contains("z3"));
    // No obligation is refused; the padding count of such a domain is beyond the cell counter (UNKNOWN).
    CHECK(p.grade != prove::Grade::Refused);
  }
  // A view reached only where an earlier view does not hold: its division is guarded by first-match.
  spec::Json j = flash_nhd_declaration();
  j["tensors"][0]["holds"] = "head == 1";
  spec::Json second = j["tensors"][0];
  second["name"] = "rest";
  second["holds"] = "token / (head - 1) >= 0";
  j["tensors"].push_back(second);
  j["tensors"][0]["name"] = "head1";
  prove::Proof p = prove_inline(dir, j, true);
  const auto* d = test::find_obligation(p, "defined", prove::Side::Source);
  REQUIRE(d);
  CHECK(d->status == prove::Status::Proved);
}

TEST_CASE("the registry lists every obligation once per side, in proof order, each with its question", "[prove][registry]") {
  std::vector<std::string> order;
  for (const auto& row : prove::obligation_registry()) {
    CHECK_FALSE(row.question.empty());
    CHECK_FALSE(row.sides.empty());
    CHECK(static_cast<bool>(row.check));
    if (order.empty() || order.back() != row.name) order.push_back(row.name);
    // A prerequisite is an obligation that runs earlier.
    for (const auto& need : row.needs) CHECK(std::find(order.begin(), order.end(), need.name) != order.end());
  }
  CHECK(order == std::vector<std::string>{"fits", "defined", "in-bounds", "injective", "covers", "carries", "values", "padding"});
  prove::Proof p = test::prove_named("vllm-flash-nhd", "vllm-flash-hnd", "small");
  std::size_t runs = 0;
  for (const auto& row : prove::obligation_registry()) runs += row.sides.size();
  CHECK(p.preconditions.size() + p.obligations.size() + p.skipped.size() == runs);
  CHECK(p.preconditions.size() == 2);  // defined(source), defined(target): not in the contract's obligation list
}

TEST_CASE("each registry row's control pair is refused, and no longer with that obligation switched off", "[prove][registry]") {
  for (const auto& row : prove::obligation_registry()) {
    if (row.control_source.empty()) continue;  // defined: see the cases above
    INFO(row.name << ": " << row.control_source << " -> " << row.control_target);
    prove::Proof on = test::prove_named(row.control_source, row.control_target, "small");
    prove::ProveOptions off_options;
    off_options.disabled = {row.name};
    prove::Proof off = test::prove_named(row.control_source, row.control_target, "small", off_options);
    REQUIRE(on.grade != prove::Grade::Unknown);
    REQUIRE(off.grade != prove::Grade::Unknown);
    CHECK(std::find(row.refuted_as.begin(), row.refuted_as.end(), on.reason) != row.refuted_as.end());
    CHECK(prove::severity(off.grade) < prove::severity(on.grade));
  }
}

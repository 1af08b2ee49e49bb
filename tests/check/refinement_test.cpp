// The refinement check (check REAL ASSUMED) on planted defects built from the shipped specs, each with its
// expected verdict and a counterexample re-checked here with layout::locate, the fixes graded OK, and a
// cross-check by enumeration on the small cache (OK <=> no position ASSUMED holds lands elsewhere in REAL).
#include <catch2/catch.hpp>

#include "check/assumed_offset.hpp"
#include "check/refinement.hpp"
#include "layout/address.hpp"
#include "layout/bind_expression.hpp"
#include "layout/block_tables.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"
#include "spec/catalog.hpp"
#include "spec/layout.hpp"

using namespace kvlayout;

namespace {

layout::BoundLayout bind_data(const std::string& name, const std::string& cache) {
  auto l = spec::load_layout(std::string(KVLAYOUT_SOURCE_DIR) + "/tests/data/check/refinement/" + name + ".json");
  const layout::BoundLayout shape = test::bind_named("vllm-flash-nhd", cache);
  return layout::bind(l, shape.cache);
}

// FlashInfer NHD's element offset, written the way a connector author writes it: K/V-first (wrong) or
// page-first (right), and with shape[1] (= 2) read as the block count.
const std::string kHD = "num_kv_heads * head_size";
const std::string kTail = " + token % 16 * " + kHD + " + head * head_size + dim";
const std::string kKvFirst = "kv * num_pages * 16 * " + kHD + " + kv_indices[token / 16] * 16 * " + kHD + kTail;
const std::string kPageFirst = "kv_indices[token / 16] * 2 * 16 * " + kHD + " + kv * 16 * " + kHD + kTail;
const std::string kShape1 = "kv * 2 * 16 * " + kHD + " + kv_indices[token / 16] * 16 * " + kHD + kTail;

layout::BoundLayout offset_layout(const layout::BoundLayout& real, const std::string& formula,
                                  std::optional<std::string> holds = std::nullopt) {
  return check::assumed_from_offset(real, {formula, std::nullopt, std::nullopt, std::move(holds)});
}

// The enumeration oracle: under `tables`, does some position ASSUMED holds land outside REAL's tensor or at
// an address where REAL does not store it?
bool differs_somewhere(const layout::BoundLayout& real, const layout::BoundLayout& assumed, const layout::BlockTables& tables) {
  std::vector<std::int64_t> c(real.coord_extents.size(), 0);
  while (true) {
    layout::Location la = layout::locate(assumed, c, tables);
    if (la.placement != layout::Placement::NotHeld) {
      if (la.placement == layout::Placement::OutOfBounds) return true;
      layout::Location lr = layout::locate(real, c, tables);
      if (lr.placement != layout::Placement::Held) return true;
      if (real.tensors[lr.address.tensor].name != assumed.tensors[la.address.tensor].name ||
          lr.address.instance != la.address.instance || lr.address.offset != la.address.offset)
        return true;
    }
    std::size_t k = c.size();
    while (k > 0 && ++c[k - 1] == real.coord_extents[k - 1]) c[--k] = 0;
    if (k == 0) return false;
  }
}

// Re-checks a WRONG_MAPPING / OUT_OF_BOUNDS counterexample: the positions and tables it shows reproduce.
void recheck(const layout::BoundLayout& real, const layout::BoundLayout& assumed, const check::CheckResult& r) {
  REQUIRE(r.counterexample.is_object());
  const auto& a = r.counterexample["assumed"];
  std::vector<std::int64_t> x;
  for (const auto& n : real.coord_names) x.push_back(a["position"][n].get<std::int64_t>());
  std::vector<std::map<std::int64_t, std::int64_t>> fixed(real.tables.size());
  for (const auto* side : {&a, &r.counterexample["real"]})
    if (side->contains("tables"))
      for (auto it = (*side)["tables"].begin(); it != (*side)["tables"].end(); ++it)
        for (std::size_t t = 0; t < real.tables.size(); ++t)
          if (real.tables[t].name == it.key())
            for (auto e = it.value().begin(); e != it.value().end(); ++e) fixed[t][std::stoll(e.key())] = e.value();
  const layout::BlockTables tables = layout::tables_with(real, fixed);
  layout::Location la = layout::locate(assumed, x, tables);
  layout::Location lr = layout::locate(real, x, tables);
  if (a.contains("element")) {
    CHECK(la.address.offset == a["element"].get<std::int64_t>());
  }
  if (r.counterexample["real"].contains("element")) {
    CHECK(lr.placement == layout::Placement::Held);
    CHECK(lr.address.offset == r.counterexample["real"]["element"].get<std::int64_t>());
    CHECK(lr.address.offset != la.address.offset);
  }
  const auto& stored = r.counterexample["stored"];
  if (stored.contains("position")) {
    std::vector<std::int64_t> q;
    for (const auto& n : real.coord_names) q.push_back(stored["position"][n].get<std::int64_t>());
    layout::Location lq = layout::locate(real, q, tables);
    CHECK(lq.placement == layout::Placement::Held);
    CHECK(lq.address.offset == la.address.offset);
    CHECK(lq.address.instance == la.address.instance);
    CHECK(q != x);
  }
  CHECK(differs_somewhere(real, assumed, tables));
}

std::string step_status(const check::CheckResult& r, const std::string& name) {
  for (const auto& s : r.steps)
    if (s.name == name) return s.status;
  return "absent";
}

// Symbolic verdict and enumeration agree on the small cache (identity, reversed and random tables).
void cross_check(const layout::BoundLayout& real, const layout::BoundLayout& assumed, const check::CheckResult& r) {
  bool any = differs_somewhere(real, assumed, layout::identity_tables(real)) ||
             differs_somewhere(real, assumed, layout::reversed_tables(real));
  for (std::uint64_t seed = 1; seed <= 3 && !any; ++seed) any = differs_somewhere(real, assumed, layout::random_tables(real, seed));
  CHECK((r.verdict == check::Verdict::Ok) == !any);
}

}  // namespace

TEST_CASE("refinement (a): K/V-first offsets over FlashInfer's blocks-first cache is WRONG_MAPPING", "[check][refinement]") {
  const auto real = test::bind_named("flashinfer-nhd", "small");
  const auto wrong = bind_data("kv-first-over-flashinfer", "small");
  check::CheckResult r = check::check_refinement(real, wrong);
  CHECK(r.verdict == check::Verdict::WrongMapping);
  CHECK_THAT(r.message, Catch::Contains("where REAL stores ("));
  CHECK(r.counterexample["stored"].contains("position"));
  CHECK(step_status(r, "refines") == "refuted");
  recheck(real, wrong, r);
  cross_check(real, wrong, r);
  // The same mistake as an offset formula, and both fixes.
  const auto wrong_formula = offset_layout(real, kKvFirst);
  check::CheckResult rf = check::check_refinement(real, wrong_formula);
  CHECK((rf.verdict == check::Verdict::WrongMapping || rf.verdict == check::Verdict::OutOfBounds));
  recheck(real, wrong_formula, rf);
  cross_check(real, wrong_formula, rf);
  const auto fixed = bind_data("blocks-first-over-flashinfer", "small");
  check::CheckResult ok = check::check_refinement(real, fixed);
  CHECK(ok.verdict == check::Verdict::Ok);
  CHECK(ok.counterexample.is_null());
  cross_check(real, fixed, ok);
  const auto fixed_formula = offset_layout(real, kPageFirst);
  check::CheckResult okf = check::check_refinement(real, fixed_formula);
  CHECK(okf.verdict == check::Verdict::Ok);
  cross_check(real, fixed_formula, okf);
}

TEST_CASE("refinement (a) at production size: llama-3.1-70b", "[check][refinement]") {
  const auto real = test::bind_named("flashinfer-nhd", "llama-3.1-70b");
  CHECK(check::check_refinement(real, bind_data("kv-first-over-flashinfer", "llama-3.1-70b")).verdict ==
        check::Verdict::WrongMapping);
  CHECK(check::check_refinement(real, bind_data("blocks-first-over-flashinfer", "llama-3.1-70b")).verdict ==
        check::Verdict::Ok);
  CHECK(check::check_refinement(real, offset_layout(real, kPageFirst)).verdict == check::Verdict::Ok);
}

TEST_CASE("refinement (b): an HND head slice over an NHD page is WRONG_MAPPING, the NHD slice is OK", "[check][refinement]") {
  for (const char* cache : {"small", "llama-3.1-70b"}) {
    const auto real = test::bind_named("vllm-flash-nhd", cache);
    const auto hnd = bind_data("hnd-slice-over-vllm-nhd", cache);
    check::CheckResult r = check::check_refinement(real, hnd);
    CHECK(r.verdict == check::Verdict::WrongMapping);
    recheck(real, hnd, r);
    const auto nhd = bind_data("nhd-slice-over-vllm-nhd", cache);
    check::CheckResult ok = check::check_refinement(real, nhd);
    CHECK(ok.verdict == check::Verdict::Ok);  // partial coverage is fine without a scope
    if (std::string(cache) == "small") {
      cross_check(real, hnd, r);
      cross_check(real, nhd, ok);
    }
  }
}

TEST_CASE("refinement (c): shape[1] read as the block count", "[check][refinement]") {
  const auto real = test::bind_named("flashinfer-nhd", "small");
  const auto a = offset_layout(real, kShape1);
  check::CheckResult r = check::check_refinement(real, a);
  CHECK((r.verdict == check::Verdict::WrongMapping || r.verdict == check::Verdict::OutOfBounds));
  recheck(real, a, r);
  cross_check(real, a, r);
}

TEST_CASE("refinement (d): --scope over all heads with ASSUMED holding half is UNCOVERED with a count", "[check][refinement]") {
  const auto real = test::bind_named("vllm-flash-nhd", "small");
  const auto half = bind_data("nhd-slice-over-vllm-nhd", "small");
  check::RefinementOptions o;
  o.scope = "token < num_tokens";
  check::CheckResult r = check::check_refinement(real, half, o);
  CHECK(r.verdict == check::Verdict::Uncovered);
  CHECK(r.counterexample["count"] == 2 * 2 * 67 * 2 * 16);
  CHECK(r.counterexample["real"]["position"]["head"].get<std::int64_t>() >= 2);
  CHECK(step_status(r, "covers-scope") == "refuted");
  o.scope = "head < 2";
  CHECK(check::check_refinement(real, half, o).verdict == check::Verdict::Ok);
  // A malformed scope is bad input.
  o.scope = "hed < 2";
  CHECK_THROWS_AS(check::check_refinement(real, half, o), spec::SpecError);
}

TEST_CASE("refinement (e): ASSUMED fp8 over a bf16 REAL is VALUE_CHANGE", "[check][refinement]") {
  const auto real = test::bind_named("vllm-flash-nhd", "small");
  check::CheckResult r = check::check_refinement(real, bind_data("fp8-over-vllm-nhd", "small"));
  CHECK(r.verdict == check::Verdict::ValueChange);
  CHECK(r.counterexample["field"] == "dtype");
  CHECK(r.counterexample["assumed"] == "fp8_e4m3");
  CHECK(step_status(r, "refines") == "skipped");
}

TEST_CASE("refinement (f): an offset past the allocation is OUT_OF_BOUNDS", "[check][refinement]") {
  const auto real = test::bind_named("vllm-flash-nhd", "small");
  const std::string hd = "num_kv_heads * head_size";
  const std::string right = "kv * num_blocks * 16 * " + hd + " + block_table[token / 16] * 16 * " + hd +
                            " + token % 16 * " + hd + " + head * head_size + dim";
  CHECK(check::check_refinement(real, offset_layout(real, right)).verdict == check::Verdict::Ok);
  const auto past = offset_layout(real, right + " + num_blocks * 16 * " + hd);
  check::CheckResult r = check::check_refinement(real, past);
  CHECK(r.verdict == check::Verdict::OutOfBounds);
  CHECK(r.counterexample["stored"]["past_allocation"] == true);
  recheck(real, past, r);
  cross_check(real, past, r);
}

TEST_CASE("refinement control: one stride off must fail", "[check][refinement]") {
  const auto real = test::bind_named("flashinfer-nhd", "small");
  std::string mutated = kPageFirst;
  mutated.replace(mutated.find("head * head_size"), 16, "head * (head_size + 1)");
  const auto a = offset_layout(real, mutated);
  check::CheckResult r = check::check_refinement(real, a);
  CHECK(r.verdict != check::Verdict::Ok);
  cross_check(real, a, r);
}

TEST_CASE("refinement bad input: a table REAL lacks, a tensor REAL lacks, other content", "[check][refinement]") {
  const auto real = test::bind_named("vllm-flash-nhd", "small");
  CHECK_THROWS_AS(check::check_refinement(real, bind_data("unknown-table-over-vllm-nhd", "small")), spec::SpecError);
  CHECK_THROWS_AS(check::check_refinement(real, bind_data("kv-first-over-flashinfer", "small")), spec::SpecError);
  CHECK_THROWS_AS(check::check_refinement(real, test::bind_named("vllm-mla", "small")), spec::SpecError);
  // defined: a formula that divides by zero somewhere is bad input (the evaluator's error), never a verdict.
  CHECK_THROWS_AS(check::check_refinement(real, offset_layout(real, "dim / (head - 1)")), spec::SpecError);
  CHECK_THROWS_AS(check::assumed_from_offset(real, {"kv + nope", std::nullopt, std::nullopt, std::nullopt}),
                  spec::SpecError);
  CHECK_THROWS_AS(check::assumed_from_offset(real, {"kv", std::string("k_buffer"), std::nullopt, std::nullopt}),
                  spec::SpecError);
}

TEST_CASE("refinement agrees with enumeration on every comparable pair of shipped engines (small)", "[check][refinement]") {
  spec::Catalog catalog(spec::default_specs_dir());
  std::vector<layout::BoundLayout> bound;
  for (const auto& l : spec::load_layouts(catalog)) {
    if (l->control) continue;
    layout::BoundLayout b = layout::bind(l, test::small_cache());
    if (b.fits()) bound.push_back(std::move(b));
  }
  int compared = 0, ok = 0;
  for (const auto& real : bound)
    for (const auto& assumed : bound) {
      check::CheckResult r;
      try {
        r = check::check_refinement(real, assumed);
      } catch (const spec::SpecError&) {
        continue;  // not comparable: other content, or a table or tensor name the other lacks
      }
      if (r.verdict == check::Verdict::ValueChange) continue;
      INFO(assumed.layout->name << " against " << real.layout->name << ": " << r.message);
      REQUIRE(r.verdict != check::Verdict::Unknown);
      bool differs = differs_somewhere(real, assumed, layout::identity_tables(real)) ||
                     differs_somewhere(real, assumed, layout::random_tables(real, 5));
      if (r.verdict == check::Verdict::Ok) {
        CHECK(!differs);
        ++ok;
      } else {
        CHECK(differs);
        recheck(real, assumed, r);
      }
      ++compared;
    }
  CHECK(compared > 20);
  CHECK(ok >= static_cast<int>(bound.size()) / 2);  // every layout refines itself, at least
}

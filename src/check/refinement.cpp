// The refinement check's driver and its structural steps (content, tables, value, defined); the solver
// steps are in refinement_steps.cpp. The steps run in order and the first that is not proved decides.
#include "check/refinement.hpp"

#include <functional>

#include "check/refinement_steps.hpp"
#include "layout/bind_expression.hpp"
#include "prove/equivalence.hpp"
#include "prove/obligations.hpp"
#include "prove/pair.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

using refinement::ms_since;
using Clock = std::chrono::steady_clock;

const std::string& file_of(const layout::BoundLayout& b) { return b.layout->file; }

// content: a coordinate must mean the same on both sides, or no question about addresses makes sense.
void require_same_content(const layout::BoundLayout& real, const layout::BoundLayout& assumed) {
  if (real.layout->content.name != assumed.layout->content.name || real.coord_names != assumed.coord_names)
    throw spec::SpecError(file_of(assumed), "/content", "content " + assumed.layout->content.name,
                          "the content of REAL (" + real.layout->name + "): " + real.layout->content.name);
  for (std::size_t i = 0; i < real.coord_extents.size(); ++i)
    if (real.coord_extents[i] != assumed.coord_extents[i])
      throw spec::SpecError(file_of(assumed), "/content",
                            "coordinate " + real.coord_names[i] + " with extent " + std::to_string(assumed.coord_extents[i]),
                            "extent " + std::to_string(real.coord_extents[i]) + " as in REAL (" + real.layout->name +
                                ") on cache shape " + real.cache.name);
}

// tables: ASSUMED reads REAL's block tables, by name; a table REAL lacks, or declared otherwise, is bad input.
std::vector<int> pair_tables(const layout::BoundLayout& real, const layout::BoundLayout& assumed) {
  std::vector<int> map;
  for (const auto& t : assumed.tables) {
    int found = -1;
    for (std::size_t i = 0; i < real.tables.size(); ++i)
      if (real.tables[i].name == t.name) found = static_cast<int>(i);
    if (found < 0) {
      std::string names;
      for (const auto& r : real.tables) names += (names.empty() ? "" : ", ") + r.name;
      throw spec::SpecError(file_of(assumed), "/tables/" + t.name, "table \"" + t.name + "\"",
                            "a table of REAL (" + real.layout->name + "): " + (names.empty() ? "it has none" : names));
    }
    const auto& r = real.tables[static_cast<std::size_t>(found)];
    if (r.length != t.length || r.first != t.first || r.end != t.end)
      throw spec::SpecError(file_of(assumed), "/tables/" + t.name,
                            "length " + std::to_string(t.length) + ", range [" + std::to_string(t.first) + ", " +
                                std::to_string(t.end) + ")",
                            "REAL's length " + std::to_string(r.length) + ", range [" + std::to_string(r.first) + ", " +
                                std::to_string(r.end) + ")");
    map.push_back(found);
  }
  return map;
}

// Tensors by name: ASSUMED must address REAL's tensors (an instance or element outside them is a verdict).
std::vector<int> pair_tensors(const layout::BoundLayout& real, const layout::BoundLayout& assumed) {
  std::vector<int> map;
  for (const auto& t : assumed.tensors) {
    int found = -1;
    for (std::size_t i = 0; i < real.tensors.size(); ++i)
      if (real.tensors[i].name == t.name) found = static_cast<int>(i);
    if (found < 0) {
      std::string names;
      for (const auto& r : real.tensors) names += (names.empty() ? "" : ", ") + r.name;
      throw spec::SpecError(file_of(assumed), t.path, "tensor \"" + t.name + "\"",
                            "a tensor of REAL (" + real.layout->name + "): " + names);
    }
    map.push_back(found);
  }
  return map;
}

// value: the same bits must mean the same number on both sides. Empty when they agree.
std::string value_change(const spec::Layout& real, const spec::Layout& assumed, nlohmann::json& cx) {
  if (prove::value_difference(real, assumed).empty()) return "";  // the one definition of "same value encoding"
  if (real.dtype != assumed.dtype) {
    cx = {{"field", "dtype"}, {"assumed", spec::dtype_name(assumed.dtype)}, {"real", spec::dtype_name(real.dtype)}};
    return "ASSUMED reads elements as " + spec::dtype_name(assumed.dtype) + ", REAL stores " + spec::dtype_name(real.dtype);
  }
  auto scale_text = [](const spec::Layout& l) {
    if (!l.scale) return std::string("none");
    std::string per;
    for (const auto& c : l.scale->per) per += (per.empty() ? "" : ", ") + c;
    return spec::dtype_name(l.scale->dtype) + " per (" + per + ")";
  };
  cx = {{"field", "scale"}, {"assumed", scale_text(assumed)}, {"real", scale_text(real)}};
  return "ASSUMED's quantisation scale is " + scale_text(assumed) + ", REAL's is " + scale_text(real);
}

CheckStep proved(const std::string& name, const std::string& detail, Clock::time_point t0) {
  return {name, "proved", detail, ms_since(t0)};
}

// defined: prove's own obligation, on both sides (a failure throws the evaluator's SpecError: exit 2).
CheckStep step_defined(const layout::BoundLayout& real, const layout::BoundLayout& assumed, prove::Session& session) {
  auto t0 = Clock::now();
  prove::Pair pair{assumed, real};
  std::string detail;
  for (prove::Side side : {prove::Side::Source, prove::Side::Target}) {
    prove::ObligationResult r = prove::check_defined(session, pair, side);
    if (r.status != prove::Status::Proved)
      return {"defined", "unknown", (side == prove::Side::Source ? "ASSUMED: " : "REAL: ") + r.detail, ms_since(t0)};
  }
  return proved("defined", "every domain and index expression of both evaluates within 64 bits, with no zero divisor", t0);
}

// Marks every step not yet asked as skipped, so the report lists the whole sequence.
void skip_rest(CheckResult& out, bool with_scope) {
  std::vector<std::string> all = {"content", "tables", "value", "defined", "in-bounds", "refines", "covers-scope"};
  for (std::size_t i = out.steps.size(); i < all.size(); ++i)
    if (all[i] != "covers-scope" || with_scope) out.steps.push_back({all[i], "skipped", "", 0});
}

}  // namespace

namespace refinement {
layout::BlockTables assumed_tables(const Pairing& p, const layout::BlockTables& real_tables) {
  layout::BlockTables out;
  for (int i : p.table_map) out.tables.push_back(real_tables.tables.at(static_cast<std::size_t>(i)));
  return out;
}
}  // namespace refinement

CheckResult check_refinement(const layout::BoundLayout& real, const layout::BoundLayout& assumed,
                             const RefinementOptions& options) {
  const auto start = Clock::now();
  CheckResult out;
  const bool with_scope = options.scope.has_value();
  // Bad input first (all of it throws): the scope, the content, the tables and tensors by name.
  expr::Expr scope = with_scope ? layout::bind_expression(real, *options.scope, "", "--scope", true) : nullptr;
  auto t0 = Clock::now();
  require_same_content(real, assumed);
  out.steps.push_back(proved("content", real.layout->content.name + ", the same coordinate extents", t0));
  t0 = Clock::now();
  refinement::Pairing p{real, assumed, pair_tables(real, assumed), pair_tensors(real, assumed), options.prove};
  out.steps.push_back(proved("tables", std::to_string(assumed.tables.size()) + " table(s) paired by name", t0));
  auto finish = [&]() {
    skip_rest(out, with_scope);
    out.ms = ms_since(start);
    return out;
  };
  // value
  t0 = Clock::now();
  if (std::string d = value_change(*real.layout, *assumed.layout, out.counterexample); !d.empty()) {
    out.verdict = Verdict::ValueChange;
    out.message = d;
    out.details.push_back(d);
    out.steps.push_back({"value", "refuted", d, ms_since(t0)});
    return finish();
  }
  out.steps.push_back(proved("value", spec::dtype_name(real.layout->dtype) + ", the same scale", t0));
  // The solver steps share one session.
  prove::Session session(options.prove, assumed.layout->name + " refines " + real.layout->name + " on " + real.cache.name,
                         assumed.layout->name + "__refines__" + real.layout->name + "__" + real.cache.name);
  using StepFn = std::function<CheckStep()>;
  std::vector<StepFn> steps = {
      [&] { return step_defined(real, assumed, session); },
      [&] { return refinement::step_in_bounds(p, session, out); },
      [&] { return refinement::step_refines(p, session, out); },
  };
  if (with_scope) steps.push_back([&] { return refinement::step_covers_scope(p, session, scope, out); });
  for (const auto& step : steps) {
    CheckStep s = step();
    out.steps.push_back(s);
    if (s.status == "refuted") return finish();
    if (s.status == "unknown") {
      out.verdict = Verdict::Unknown;
      out.message = s.name + ": " + s.detail;
      out.counterexample = nullptr;
      return finish();
    }
  }
  out.verdict = Verdict::Ok;
  out.message = "ASSUMED (" + assumed.layout->name + ") refines REAL (" + real.layout->name + ") on " + real.cache.name +
                (with_scope ? " and covers the scope" : "") + ": every position it holds is where REAL stores it";
  return finish();
}

}  // namespace kvlayout::check

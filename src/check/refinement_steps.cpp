// The refinement check's solver steps: in-bounds, refines, covers-scope. Each asks, per view of ASSUMED,
// whether some held position breaks the property under some block table (tables shared by name with
// REAL's, any injective map); a witness is minimised, turned into concrete tables, re-checked with
// layout::locate and explained with what REAL really stores at ASSUMED's address (check::stored_at).
#include "check/refinement_steps.hpp"

#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "layout/domain_cells.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"

namespace kvlayout::check::refinement {
namespace {

using Clock = std::chrono::steady_clock;

// Both sides' encoders over one context; ASSUMED reads REAL's table functions through the name map.
struct Encoders {
  prove::Encoder real;
  prove::Encoder assumed;
  prove::SymbolicPosition x;
  Encoders(const Pairing& p, z3::context& ctx)
      : real(ctx, p.real, "R"), assumed(ctx, p.assumed, "A", &real, &p.table_map), x(real.position("x")) {}

  // REAL's concrete tables from a model: every entry either side read, ASSUMED's renumbered to REAL's.
  layout::BlockTables tables(const Pairing& p, const z3::model& m) const {
    std::vector<prove::Encoder::LookupTerm> lookups = real.lookups();
    for (const auto& l : assumed.lookups())
      lookups.push_back({p.table_map.at(static_cast<std::size_t>(l.table)), l.entry, l.value});
    return prove::tables_from_model(p.real, lookups, m);
  }
};

// Solves `q`; on Sat minimises x and returns REAL's concrete tables. Fills the step on Unsat/Unknown.
std::optional<layout::BlockTables> solve(const Pairing& p, Encoders& e, prove::Query& q, CheckStep& step,
                                         std::vector<std::int64_t>& x) {
  prove::Answer a = q.check();
  if (a == prove::Answer::Unsat) return std::nullopt;
  if (a == prove::Answer::Unknown) {
    step.status = "unknown";
    step.detail = "the solver gave no answer (" + q.unknown_reason() + ")";
    return std::nullopt;
  }
  // Coordinates first, then the table values read (a counterexample with small block numbers reads best).
  std::vector<z3::expr> vars = e.x.coords;
  for (const auto& l : e.real.lookups()) vars.push_back(l.value);
  for (const auto& l : e.assumed.lookups()) vars.push_back(l.value);
  z3::model m = prove::minimise(q, vars);
  x = prove::model_coords(m, e.x);
  return e.tables(p, m);
}

}  // namespace

CheckStep step_in_bounds(const Pairing& p, prove::Session& session, CheckResult& out) {
  auto t0 = Clock::now();
  CheckStep step{"in-bounds", "proved", "", 0};
  for (std::size_t ta = 0; ta < p.assumed.tensors.size(); ++ta) {
    const auto& real_tensor = p.real.tensors.at(static_cast<std::size_t>(p.tensor_map[ta]));
    for (std::size_t va = 0; va < p.assumed.tensors[ta].views.size(); ++va) {
      Encoders e(p, session.ctx());
      z3::context& ctx = session.ctx();
      // Sequenced: the lookups the index and offset register are the ones entry_outside_table tests.
      z3::expr axes = e.assumed.within_axes(ta, va, e.x);
      z3::expr off = e.assumed.offset(ta, va, e.x);
      z3::expr inst = e.assumed.instance(ta, e.x);
      z3::expr outside_table = e.assumed.entry_outside_table();
      z3::expr out_of_tensor = inst < 0 || inst >= ctx.int_val(static_cast<int64_t>(real_tensor.instances)) || off < 0 ||
                               off >= ctx.int_val(static_cast<int64_t>(real_tensor.size));
      prove::Query q(session, "in-bounds " + p.assumed.tensors[ta].views[va].name);
      q.add(e.assumed.in_box(e.x) && e.assumed.view_domain(ta, va, e.x) && (!axes || outside_table || out_of_tensor) &&
            e.assumed.table_axioms());
      std::vector<std::int64_t> x;
      auto tables = solve(p, e, q, step, x);
      if (step.status == "unknown") break;
      if (!tables) continue;
      // Re-check: the evaluator must find ASSUMED's address outside its axes, its tables or REAL's tensor.
      const layout::Location la = layout::locate(p.assumed, x, assumed_tables(p, *tables));
      const layout::Location lr = layout::locate(p.real, x, *tables);
      const bool outside = la.placement == layout::Placement::OutOfBounds ||
                           (la.placement == layout::Placement::Held &&
                            (la.address.instance < 0 || la.address.instance >= real_tensor.instances ||
                             la.address.offset < 0 || la.address.offset >= real_tensor.size));
      if (!outside)
        throw prove::InternalError("in-bounds witness " + layout::format_coordinate(p.assumed, x) + " does not reproduce");
      out.verdict = Verdict::OutOfBounds;
      explain(p, x, *tables, la, lr, "", out);
      step.status = "refuted";
      step.detail = out.message;
      step.ms = ms_since(t0);
      return step;
    }
    if (step.status == "unknown") break;
  }
  if (step.status == "proved")
    step.detail = "every address ASSUMED gives a held position lies inside REAL's tensor instance";
  step.ms = ms_since(t0);
  return step;
}

CheckStep step_refines(const Pairing& p, prove::Session& session, CheckResult& out) {
  auto t0 = Clock::now();
  CheckStep step{"refines", "proved", "", 0};
  for (std::size_t ta = 0; ta < p.assumed.tensors.size() && step.status == "proved"; ++ta) {
    const auto rt = static_cast<std::size_t>(p.tensor_map[ta]);
    for (std::size_t va = 0; va < p.assumed.tensors[ta].views.size(); ++va) {
      Encoders e(p, session.ctx());
      z3::expr off_a = e.assumed.offset(ta, va, e.x);
      z3::expr inst_a = e.assumed.instance(ta, e.x);
      // REAL stores x at that address: some view of the paired tensor stores x there, within its axes and
      // tables (the evaluator's Held).
      z3::expr agree = session.ctx().bool_val(false);
      for (std::size_t vr = 0; vr < p.real.tensors[rt].views.size(); ++vr) {
        const std::size_t first = e.real.lookups().size();
        z3::expr off_r = e.real.offset(rt, vr, e.x);
        z3::expr axes = e.real.within_axes(rt, vr, e.x);
        z3::expr outside = e.real.entry_outside_table(first);
        agree = agree || (e.real.view_domain(rt, vr, e.x) && axes && !outside && e.real.instance(rt, e.x) == inst_a &&
                          off_r == off_a);
      }
      prove::Query q(session, "refines " + p.assumed.tensors[ta].views[va].name);
      q.add(e.real.in_box(e.x) && e.assumed.view_domain(ta, va, e.x) && !agree && e.assumed.table_axioms() &&
            e.real.table_axioms());
      std::vector<std::int64_t> x;
      auto tables = solve(p, e, q, step, x);
      if (step.status == "unknown") break;
      if (!tables) continue;
      const layout::Location la = layout::locate(p.assumed, x, assumed_tables(p, *tables));
      const layout::Location lr = layout::locate(p.real, x, *tables);
      const bool same = la.placement == layout::Placement::Held && lr.placement == layout::Placement::Held &&
                        static_cast<std::size_t>(lr.address.tensor) == rt && la.address.instance == lr.address.instance &&
                        la.address.offset == lr.address.offset;
      if (same || la.placement != layout::Placement::Held)
        throw prove::InternalError("refines witness " + layout::format_coordinate(p.assumed, x) + " does not reproduce");
      out.verdict = Verdict::WrongMapping;
      std::string real_side = lr.placement == layout::Placement::Held
                                  ? " (REAL puts it at " + address_text(p.real, lr) + ")"
                                  : " (REAL does not hold it)";
      explain(p, x, *tables, la, lr, real_side, out);
      step.status = "refuted";
      step.detail = out.message;
      break;
    }
  }
  if (step.status == "proved")
    step.detail = "wherever ASSUMED holds a position, REAL stores it at the same tensor, instance and element, "
                  "under every block table";
  step.ms = ms_since(t0);
  return step;
}

CheckStep step_covers_scope(const Pairing& p, prove::Session& session, const expr::Expr& scope, CheckResult& out) {
  auto t0 = Clock::now();
  CheckStep step{"covers-scope", "proved", "", 0};
  Encoders e(p, session.ctx());
  prove::Query q(session, "covers-scope");
  q.add(e.real.in_box(e.x) && e.real.truth(scope, e.x) && e.real.held(e.x) && !e.assumed.held(e.x) &&
        e.real.table_axioms());
  std::vector<std::int64_t> x;
  auto tables = solve(p, e, q, step, x);
  if (step.status == "unknown" || !tables) {
    if (step.status == "proved") step.detail = "every in-scope position REAL holds, ASSUMED holds";
    step.ms = ms_since(t0);
    return step;
  }
  // Re-check: REAL holds x, ASSUMED does not, and x is in scope.
  const layout::Location lr = layout::locate(p.real, x, *tables);
  const layout::Location la = layout::locate(p.assumed, x, assumed_tables(p, *tables));
  expr::Environment env{x, [&](int t, std::int64_t i) { return tables->entry(static_cast<std::size_t>(t), i); }};
  if (lr.placement != layout::Placement::Held || la.placement != layout::Placement::NotHeld || expr::evaluate(scope, env) == 0)
    throw prove::InternalError("covers-scope witness " + layout::format_coordinate(p.real, x) + " does not reproduce");
  auto set = layout::describe_positions(p.real, {scope, layout::held_predicate(p.real), layout::held_predicate(p.assumed)},
                                        [](const std::vector<bool>& t) { return t[0] && t[1] && !t[2]; });
  std::string count = set ? std::to_string(set->count) + " in-scope position(s)" : "in-scope positions";
  std::string ranges;
  if (set)
    for (const auto& s : set->spans) ranges += (ranges.empty() ? "" : ", ") + s;
  out.verdict = Verdict::Uncovered;
  out.message = count + " REAL holds are never held by ASSUMED" + (ranges.empty() ? "" : " (" + ranges + ")") +
                ", e.g. " + layout::format_coordinate(p.real, x);
  out.counterexample = {{"real", position_json(p.real, x, lr)}};
  if (set) {
    out.counterexample["count"] = set->count;
    out.counterexample["ranges"] = set->spans;
  }
  out.details.push_back("REAL (" + p.real.layout->name + ") puts " + position_text(p.real, x, lr) +
                        "; ASSUMED (" + p.assumed.layout->name + ") does not hold it");
  step.status = "refuted";
  step.detail = out.message;
  step.ms = ms_since(t0);
  return step;
}

}  // namespace kvlayout::check::refinement

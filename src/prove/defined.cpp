// defined(side): every expression the concrete evaluator computes for a position evaluates without error
// — no division or modulo by zero, no 64-bit overflow in any intermediate value. This is a precondition,
// not a grade: the solver works in unbounded integers and gives x / 0 an arbitrary value, so on a
// declaration that fails somewhere a proof would be about another function than the one an engine (or
// `addr`, or the cross-check) computes. It runs before any other obligation over the coordinate box:
//   - interval analysis first: every subexpression bounded in int64 and every divisor a positive
//     constant (the shipped declarations all pass this way, with no solver call);
//   - the solver for the rest: is there a position where the evaluator reaches a view's domain test that
//     fails, or a held position whose index fails while its table reads lie inside their tables?
// A witness is re-evaluated by the concrete evaluator, whose SpecError (file, JSON path, coordinate, the
// failing operation) is what the user sees, with exit 2. A solver limit leaves the obligation unknown
// (the grade is then UNKNOWN, never exact).
#include "expr/expr.hpp"
#include "layout/address.hpp"
#include "layout/interval.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

struct ViewRef {
  std::size_t tensor;
  std::size_t view;
};

// Phase 1. @post a view not returned evaluates without error on every position of the box.
std::vector<ViewRef> views_not_settled_by_intervals(const layout::BoundLayout& b) {
  const std::vector<layout::Interval> box = layout::coordinate_bounds(b, expr::literal(1));
  std::vector<ViewRef> open;
  for (std::size_t ti = 0; ti < b.tensors.size(); ++ti)
    for (std::size_t vi = 0; vi < b.tensors[ti].views.size(); ++vi) {
      const auto& v = b.tensors[ti].views[vi];
      bool settled = layout::defined_on(v.holds, box, b);
      const std::vector<layout::Interval> held = layout::coordinate_bounds(b, v.holds);
      for (const auto& e : v.index) settled = settled && layout::defined_on(e, held, b);
      if (!settled) open.push_back({ti, vi});
    }
  return open;
}

// Phase 2: one query over every open view. @post Unsat => no position makes the evaluator fail.
z3::expr failure_somewhere(Encoder& enc, const SymbolicPosition& x, const std::vector<ViewRef>& open) {
  z3::expr failure = enc.ctx().bool_val(false);
  for (const ViewRef& r : open) {
    const auto& v = enc.bound().tensors[r.tensor].views[r.view];
    z3::expr reached = enc.reaches_view(r.tensor, r.view, x);
    failure = failure || (reached && !enc.defined(v.holds, x));
    const std::size_t first_lookup = enc.lookups().size();
    z3::expr indices = enc.ctx().bool_val(true);
    for (const auto& e : v.index) {
      enc.value(e, x);  // registers the view's table reads
      indices = indices && enc.defined(e, x);
    }
    z3::expr reads_inside = !enc.entry_outside_table(first_lookup);
    failure = failure || (reached && enc.truth(v.holds, x) && reads_inside && !indices);
  }
  return failure;
}

}  // namespace

ObligationResult check_defined(Session& session, const Pair& pair, Side side) {
  ObligationResult r;
  r.name = "defined";
  r.side = side;
  const layout::BoundLayout& b = pair.side(side);
  const std::vector<ViewRef> open = session.options().normalise ? views_not_settled_by_intervals(b) : [&] {
    std::vector<ViewRef> all;
    for (std::size_t ti = 0; ti < b.tensors.size(); ++ti)
      for (std::size_t vi = 0; vi < b.tensors[ti].views.size(); ++vi) all.push_back({ti, vi});
    return all;
  }();
  if (open.empty()) {
    r.method = "interval analysis";
    r.detail = "every domain and index expression evaluates within 64 bits, with no zero divisor";
    return r;
  }
  r.method = session.options().normalise ? "interval analysis + z3" : "z3";
  Encoder enc(session.ctx(), b, side == Side::Source ? "S" : "T");
  SymbolicPosition x = enc.position("x");
  z3::expr failure = failure_somewhere(enc, x, open);
  Query s(session, "defined(" + side_name(side) + ")");
  s.add(enc.in_box(x) && failure && enc.table_axioms());
  switch (s.check()) {
    case Answer::Unsat:
      r.detail = "every domain and index expression evaluates within 64 bits, with no zero divisor (" +
                 std::to_string(open.size()) + " view(s) by the solver)";
      return r;
    case Answer::Unknown:
      set_solver_limit(r, s.unknown_reason());
      return r;
    case Answer::Sat: break;
  }
  std::vector<z3::expr> vars = x.coords;
  for (const auto& l : enc.lookups()) vars.push_back(l.value);
  z3::model m = minimise(s, vars);
  const std::vector<std::int64_t> coord = model_coords(m, x);
  const layout::BlockTables tables = tables_from_model(enc, m);
  // The evaluator's own error names the expression, its JSON path and what failed at this coordinate.
  layout::locate(b, coord, tables);
  throw InternalError("defined(" + side_name(side) + ") witness " + layout::format_coordinate(b, coord) +
                      " does not reproduce: the evaluator computes every expression there");
}

}  // namespace kvlayout::prove

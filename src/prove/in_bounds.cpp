// in-bounds(side): for every held position, its tensor instance exists (coord(per) - per_first in
// [0, instances): a per_range may leave held positions without one), each index lies within its axis,
// each table entry read exists, and the element offset lies within the allocation. Interval analysis
// discharges what it can; the residual goes to one solver query per view.
#include <algorithm>

#include "expr/print.hpp"
#include "layout/interval.hpp"
#include "layout/view_algebra.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

using expr::Op;

void collect(const expr::Expr& e, std::vector<expr::Expr>& lookups, std::vector<expr::Expr>& divisors) {
  if (e->op == Op::Lookup) lookups.push_back(e);
  if ((e->op == Op::Div || e->op == Op::Mod || e->op == Op::CeilDiv) && e->args[1]->op != Op::Literal)
    divisors.push_back(e->args[1]);
  for (const auto& a : e->args) collect(a, lookups, divisors);
}

struct Residual {
  bool instance = false;  // the instance (coord(per) - per_first) may leave [0, instances)
  std::vector<std::size_t> axes;
  bool lookups = false;
  bool offset = false;
  std::vector<expr::Expr> divisors;
  bool empty() const { return !instance && axes.empty() && !lookups && !offset && divisors.empty(); }
};

// Everything the view could violate, for the solver to check (the normaliser switched off).
Residual everything(const layout::BoundTensor& t, const layout::BoundView& v) {
  Residual r;
  r.instance = t.per >= 0;
  for (std::size_t k = 0; k < v.index.size(); ++k) {
    r.axes.push_back(k);
    std::vector<expr::Expr> lookups, divisors;
    collect(v.index[k], lookups, divisors);
    r.lookups = r.lookups || !lookups.empty();
    r.divisors.insert(r.divisors.end(), divisors.begin(), divisors.end());
  }
  r.offset = true;
  return r;
}

Residual residual(const layout::BoundLayout& b, const layout::BoundTensor& t, const layout::BoundView& v) {
  Residual r;
  std::vector<layout::Interval> bounds = layout::coordinate_bounds(b, v.holds);
  for (const auto& iv : bounds)
    if (iv.lo > iv.hi) return r;  // the view holds nothing
  // The instance: its coordinate's interval, shifted by per_first, within [0, instances).
  if (t.per >= 0) {
    const layout::Interval& c = bounds[static_cast<std::size_t>(t.per)];  // within the box: no overflow below
    if (c.lo - t.per_first < 0 || c.hi - t.per_first >= t.instances) r.instance = true;
  }
  for (std::size_t k = 0; k < v.index.size(); ++k) {
    auto range = layout::range_of(v.index[k], bounds, b);
    if (!range || range->lo < 0 || range->hi >= v.extents[k]) r.axes.push_back(k);
    std::vector<expr::Expr> lookups, divisors;
    collect(v.index[k], lookups, divisors);
    for (const auto& l : lookups) {
      auto entry = layout::range_of(l->args[0], bounds, b);
      const auto& table = b.tables[static_cast<std::size_t>(l->value)];
      if (!entry || entry->lo < 0 || entry->hi >= table.length) r.lookups = true;
    }
    for (const auto& d : divisors) {
      auto range_d = layout::range_of(d, bounds, b);
      if (!range_d || (range_d->lo <= 0 && range_d->hi >= 0)) r.divisors.push_back(d);
    }
  }
  // With every index inside its axis, the offset lies in [offset, last_offset]; check that fits the
  // allocation once, concretely.
  if (layout::span(v).last >= t.size) r.offset = true;
  return r;
}

}  // namespace

ObligationResult check_in_bounds(Session& session, const Pair& pair, Side side) {
  ObligationResult r;
  r.name = "in-bounds";
  r.side = side;
  const layout::BoundLayout& b = pair.side(side);
  int by_intervals = 0, by_solver = 0;
  bool unknown = false;
  std::string why;  // the reason of the first unknown answer
  for (std::size_t ti = 0; ti < b.tensors.size(); ++ti) {
    const auto& t = b.tensors[ti];
    for (std::size_t vi = 0; vi < t.views.size(); ++vi) {
      const auto& v = t.views[vi];
      Residual res = session.options().normalise ? residual(b, t, v) : everything(t, v);
      if (res.empty()) {
        ++by_intervals;
        continue;
      }
      ++by_solver;
      Encoder enc(session.ctx(), b, side == Side::Source ? "S" : "T");
      SymbolicPosition x = enc.position("x");
      z3::expr violation = session.ctx().bool_val(false);
      if (res.instance) {
        z3::expr inst = enc.instance(ti, x);
        violation = violation || inst < 0 || inst >= session.ctx().int_val(static_cast<int64_t>(t.instances));
      }
      for (std::size_t k : res.axes) {
        z3::expr i = enc.value(v.index[k], x);
        violation = violation || i < 0 || i >= session.ctx().int_val(static_cast<int64_t>(v.extents[k]));
      }
      if (res.lookups) {
        std::size_t first = enc.lookups().size();
        for (const auto& e : v.index) enc.value(e, x);
        violation = violation || enc.entry_outside_table(first);
      }
      if (res.offset) {
        z3::expr off = enc.offset(ti, vi, x);
        violation = violation || off < 0 || off >= session.ctx().int_val(static_cast<int64_t>(t.size));
      }
      for (const auto& d : res.divisors) violation = violation || enc.value(d, x) == 0;
      Query s(session, "in-bounds(" + side_name(side) + ") view " + v.name);
      s.add(enc.in_box(x) && enc.view_domain(ti, vi, x) && violation && enc.table_axioms());
      Answer a = s.check();
      if (a == Answer::Unknown) {
        if (!unknown) why = s.unknown_reason();
        unknown = true;
        continue;
      }
      if (a == Answer::Unsat) continue;
      std::vector<z3::expr> vars = x.coords;
      for (const auto& l : enc.lookups()) vars.push_back(l.value);
      z3::model m = minimise(s, vars);
      std::vector<std::int64_t> coord = model_coords(m, x);
      layout::BlockTables tables = tables_from_model(enc, m);
      PositionWitness w = make_witness(pair, side, coord, tables);
      const layout::Location& here = side == Side::Source ? *w.source : *w.target;
      if (here.placement != layout::Placement::OutOfBounds)
        throw InternalError("in-bounds(" + side_name(side) + ") counterexample " +
                            layout::format_coordinate(b, coord) + " does not reproduce: the evaluator finds it in bounds");
      r.status = Status::Refuted;
      r.reason = Reason::OutOfBounds;
      r.method = "interval analysis + z3";
      r.detail = b.layout->name + " addresses out of bounds: " + here.violation;
      Counterexample c;
      c.summary = layout::format_coordinate(b, coord) + ": " + here.violation;
      c.positions.push_back(std::move(w));
      r.counterexample = c;
      return r;
    }
  }
  r.method = by_solver == 0 ? "interval analysis" : "interval analysis + z3";
  if (unknown) {
    set_solver_limit(r, why);
    return r;
  }
  r.detail = "every instance, index, table entry and offset within range (" + std::to_string(by_intervals) +
             " view(s) by intervals, " + std::to_string(by_solver) + " by the solver)";
  return r;
}

}  // namespace kvlayout::prove

// injective(side): no two held positions share an element. When in-bounds is proven the question splits
// soundly in two: (1) a concrete stride check that a view's offset is injective on its index box, and
// views of one tensor occupy disjoint ranges; (2) a solver query that the index vector is injective on
// the view's domain, over small index values only. What the split cannot settle goes to one query on
// element offsets.
#include <algorithm>

#include "layout/view_algebra.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/obligations.hpp"
#include "prove/recover.hpp"

namespace kvlayout::prove {
namespace {

z3::expr differ(const SymbolicPosition& x, const SymbolicPosition& y) {
  z3::expr any = x.coords.front().ctx().bool_val(false);
  for (std::size_t i = 0; i < x.coords.size(); ++i) any = any || x.coords[i] != y.coords[i];
  return any;
}

}  // namespace

ObligationResult check_injective(Session& session, const Pair& pair, Side side, bool in_bounds) {
  ObligationResult r;
  r.name = "injective";
  r.side = side;
  const layout::BoundLayout& b = pair.side(side);
  const std::string prefix = side == Side::Source ? "S" : "T";
  const bool normalise = session.options().normalise;
  int by_strides = 0, by_recovery = 0, by_index = 0, by_offset = 0;
  bool unknown = false;

  // One query: are there x != y (x stored by view v1, y by v2 of tensor t, same instance) that collide?
  // `on_index` compares index vectors (v1 == v2 only), else element offsets.
  auto query = [&](std::size_t ti, std::size_t v1, std::size_t v2, bool on_index) -> bool {
    Encoder enc(session.ctx(), b, prefix);
    SymbolicPosition x = enc.position("x"), y = enc.position("y");
    z3::expr same = session.ctx().bool_val(true);
    if (on_index) {
      const auto& v = b.tensors[ti].views[v1];
      for (const auto& e : v.index) same = same && enc.value(e, x) == enc.value(e, y);
    } else {
      same = enc.offset(ti, v1, x) == enc.offset(ti, v2, y);
    }
    const auto& t = b.tensors[ti];
    std::string what = "injective(" + side_name(side) + ") " +
                       (v1 == v2 ? "view " + t.views[v1].name : "views " + t.views[v1].name + "/" + t.views[v2].name) +
                       (on_index ? " index vectors" : " offsets");
    Query s(session, what);
    // A read outside a table has no value (in-bounds reports it); collisions are sought among positions
    // whose table reads all exist.
    // Likewise an index outside its axis has no element (the evaluator gives it none; in-bounds reports
    // it): when in-bounds is not proven, collisions are sought among positions inside every axis.
    z3::expr inside = in_bounds ? session.ctx().bool_val(true) : enc.within_axes(ti, v1, x) && enc.within_axes(ti, v2, y);
    s.add(enc.in_box(x) && enc.in_box(y) && enc.view_domain(ti, v1, x) && enc.view_domain(ti, v2, y) &&
          enc.instance(ti, x) == enc.instance(ti, y) && differ(x, y) && same && inside && !enc.entry_outside_table() &&
          enc.table_axioms());
    Answer a = s.check();
    if (a == Answer::Unknown) unknown = true;
    if (a != Answer::Sat) return false;
    std::vector<z3::expr> vars = x.coords;
    vars.insert(vars.end(), y.coords.begin(), y.coords.end());
    for (const auto& l : enc.lookups()) vars.push_back(l.value);  // small table entries read best
    z3::model m = minimise(s, vars);
    layout::BlockTables tables = tables_from_model(enc, m);
    std::vector<std::int64_t> cx = model_coords(m, x), cy = model_coords(m, y);
    PositionWitness wx = make_witness(pair, side, cx, tables), wy = make_witness(pair, side, cy, tables);
    const layout::Location& lx = side == Side::Source ? *wx.source : *wx.target;
    const layout::Location& ly = side == Side::Source ? *wy.source : *wy.target;
    bool reproduced = lx.placement != layout::Placement::NotHeld && ly.placement != layout::Placement::NotHeld &&
                      lx.address.tensor == ly.address.tensor && lx.address.instance == ly.address.instance &&
                      lx.address.offset == ly.address.offset && cx != cy;
    if (!reproduced)
      throw InternalError("injective(" + side_name(side) + ") counterexample " + layout::format_coordinate(b, cx) +
                          " / " + layout::format_coordinate(b, cy) + " does not reproduce: the evaluator gives different elements");
    r.status = Status::Refuted;
    r.reason = Reason::Collision;
    const auto& tensor = b.tensors[static_cast<std::size_t>(lx.address.tensor)];
    r.detail = "two logical positions share one element of " + b.layout->name + ": " + tensor.name + "[" +
               std::to_string(lx.address.instance) + "] element " + std::to_string(lx.address.offset);
    Counterexample c;
    c.summary = layout::format_coordinate(b, cx) + " and " + layout::format_coordinate(b, cy) + " -> " + tensor.name +
                "[" + std::to_string(lx.address.instance) + "] element " + std::to_string(lx.address.offset);
    c.positions.push_back(std::move(wx));
    c.positions.push_back(std::move(wy));
    r.counterexample = c;
    return true;
  };

  for (std::size_t ti = 0; ti < b.tensors.size(); ++ti) {
    const auto& t = b.tensors[ti];
    for (std::size_t v = 0; v < t.views.size(); ++v) {
      bool split = normalise && in_bounds && layout::strides_injective(t.views[v]);
      if (split && unrecovered_coordinates(b, t, t.views[v]).empty()) {
        ++by_recovery;
        continue;
      }
      if (split) ++by_index; else ++by_offset;
      if (query(ti, v, v, split)) {
        r.method = split ? "stride check + z3 on index vectors" : "z3 on element offsets";
        return r;
      }
    }
    for (std::size_t v1 = 0; v1 < t.views.size(); ++v1) {
      for (std::size_t v2 = v1 + 1; v2 < t.views.size(); ++v2) {
        if (normalise && in_bounds && layout::disjoint(layout::span(t.views[v1]), layout::span(t.views[v2]))) {
          ++by_strides;
          continue;
        }
        ++by_offset;
        if (query(ti, v1, v2, false)) {
          r.method = "z3 on element offsets";
          return r;
        }
      }
    }
  }
  r.method = by_index + by_offset == 0 ? "stride check + index recovery" : "stride check + index recovery + z3";
  if (unknown) {
    r.status = Status::Unknown;
    r.reason = Reason::SolverLimit;
    r.detail = "the solver gave no answer (" + session.unknown_reason() + ")";
    return r;
  }
  r.detail = "no two held positions share an element (" + std::to_string(by_recovery) + " view(s) by index recovery, " +
             std::to_string(by_index) + " by index vectors, " +
             std::to_string(by_strides) + " view pair(s) by disjoint ranges, " + std::to_string(by_offset) +
             " by offsets)";
  return r;
}

}  // namespace kvlayout::prove

// injective(side): no two held positions share an element. When in-bounds is proven the question splits
// soundly in two: (1) a concrete stride check that a view's offset is injective on its index box, and
// views of one tensor occupy disjoint ranges; (2) a solver query that the index vector is injective on
// the view's domain, over small index values only. What the split cannot settle goes to one query on
// element offsets. Phases: settle by the normaliser (1), query the rest (2), re-check a collision (3).
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

// Phase 3: the refutation, re-checked. @post the two coordinates differ and the concrete evaluator puts
// both on one element, else InternalError (a counterexample that does not reproduce is never shown).
ObligationResult collision_result(const Pair& pair, Side side, const std::vector<std::int64_t>& cx,
                                  const std::vector<std::int64_t>& cy, const layout::BlockTables& tables) {
  const layout::BoundLayout& b = pair.side(side);
  PositionWitness wx = make_witness(pair, side, cx, tables), wy = make_witness(pair, side, cy, tables);
  const layout::Location& lx = side == Side::Source ? *wx.source : *wx.target;
  const layout::Location& ly = side == Side::Source ? *wy.source : *wy.target;
  const bool reproduced = lx.placement != layout::Placement::NotHeld && ly.placement != layout::Placement::NotHeld &&
                          lx.address.tensor == ly.address.tensor && lx.address.instance == ly.address.instance &&
                          lx.address.offset == ly.address.offset && cx != cy;
  if (!reproduced)
    throw InternalError("injective(" + side_name(side) + ") counterexample " + layout::format_coordinate(b, cx) + " / " +
                        layout::format_coordinate(b, cy) + " does not reproduce: the evaluator gives different elements");
  ObligationResult r;
  r.name = "injective";
  r.side = side;
  r.status = Status::Refuted;
  r.reason = Reason::Collision;
  const auto& tensor = b.tensors[static_cast<std::size_t>(lx.address.tensor)];
  const std::string element = tensor.name + "[" + std::to_string(lx.address.instance) + "] element " + std::to_string(lx.address.offset);
  r.detail = "two logical positions share one element of " + b.layout->name + ": " + element;
  Counterexample c;
  c.summary = layout::format_coordinate(b, cx) + " and " + layout::format_coordinate(b, cy) + " -> " + element;
  c.positions.push_back(std::move(wx));
  c.positions.push_back(std::move(wy));
  r.counterexample = c;
  return r;
}

// Which two views of one tensor a query compares (v1 == v2: a view against itself), and how.
struct Candidate {
  std::size_t tensor, v1, v2;
  bool on_index;  // compare index vectors (v1 == v2 only, after the stride check), else element offsets
};

// Phase 2: one solver query. @post Sat => a counterexample the evaluator reproduces (else InternalError);
// Unsat => no two positions stored by (v1, v2) in one instance share an element.
Answer find_collision(Session& session, const Pair& pair, Side side, bool in_bounds, const Candidate& c,
                      ObligationResult& r, std::string& why) {
  const layout::BoundLayout& b = pair.side(side);
  Encoder enc(session.ctx(), b, side == Side::Source ? "S" : "T");
  SymbolicPosition x = enc.position("x"), y = enc.position("y");
  z3::expr same = session.ctx().bool_val(true);
  if (c.on_index) {
    for (const auto& e : b.tensors[c.tensor].views[c.v1].index) same = same && enc.value(e, x) == enc.value(e, y);
  } else {
    same = enc.offset(c.tensor, c.v1, x) == enc.offset(c.tensor, c.v2, y);
  }
  const auto& t = b.tensors[c.tensor];
  Query s(session, "injective(" + side_name(side) + ") " +
                       (c.v1 == c.v2 ? "view " + t.views[c.v1].name : "views " + t.views[c.v1].name + "/" + t.views[c.v2].name) +
                       (c.on_index ? " index vectors" : " offsets"));
  // A read outside a table has no value, and an index outside its axis no element (the evaluator gives
  // neither; in-bounds reports both): collisions are sought among positions whose table reads exist and,
  // when in-bounds is not proven, whose indices lie inside every axis.
  z3::expr inside = in_bounds ? session.ctx().bool_val(true)
                              : enc.within_axes(c.tensor, c.v1, x) && enc.within_axes(c.tensor, c.v2, y);
  s.add(enc.in_box(x) && enc.in_box(y) && enc.view_domain(c.tensor, c.v1, x) && enc.view_domain(c.tensor, c.v2, y) &&
        enc.instance(c.tensor, x) == enc.instance(c.tensor, y) && differ(x, y) && same && inside &&
        !enc.entry_outside_table() && enc.table_axioms());
  const Answer a = s.check();
  why = s.unknown_reason();
  if (a != Answer::Sat) return a;
  std::vector<z3::expr> vars = x.coords;
  vars.insert(vars.end(), y.coords.begin(), y.coords.end());
  for (const auto& l : enc.lookups()) vars.push_back(l.value);  // small table entries read best
  z3::model m = minimise(s, vars);
  r = collision_result(pair, side, model_coords(m, x), model_coords(m, y), tables_from_model(enc, m));
  return a;
}

}  // namespace

ObligationResult check_injective(Session& session, const Pair& pair, Side side, bool in_bounds) {
  ObligationResult r;
  r.name = "injective";
  r.side = side;
  const layout::BoundLayout& b = pair.side(side);
  const bool normalise = session.options().normalise;
  int by_strides = 0, by_recovery = 0, by_index = 0, by_offset = 0;

  // Phase 1 (normaliser): settle what the stride check, index recovery and disjoint spans prove, and
  // list the rest as solver queries. @post every (view, view) pair of a tensor is settled or listed.
  std::vector<Candidate> queries;
  for (std::size_t ti = 0; ti < b.tensors.size(); ++ti) {
    const auto& t = b.tensors[ti];
    for (std::size_t v = 0; v < t.views.size(); ++v) {
      const bool split = normalise && in_bounds && layout::strides_injective(t.views[v]);
      if (split && unrecovered_coordinates(b, t, t.views[v]).empty()) {
        ++by_recovery;
        continue;
      }
      ++(split ? by_index : by_offset);
      queries.push_back({ti, v, v, split});
    }
    for (std::size_t v1 = 0; v1 < t.views.size(); ++v1)
      for (std::size_t v2 = v1 + 1; v2 < t.views.size(); ++v2) {
        if (normalise && in_bounds && layout::disjoint(layout::span(t.views[v1]), layout::span(t.views[v2]))) {
          ++by_strides;
          continue;
        }
        ++by_offset;
        queries.push_back({ti, v1, v2, false});
      }
  }

  // Phase 2 (solver): the first collision found refutes; an unknown answer leaves the result unknown.
  bool unknown = false;
  std::string why, first_why;  // the reason of the first unknown answer
  for (const Candidate& c : queries) {
    const Answer a = find_collision(session, pair, side, in_bounds, c, r, why);
    if (a == Answer::Sat) {
      r.method = c.on_index ? "stride check + z3 on index vectors" : "z3 on element offsets";
      return r;
    }
    if (a == Answer::Unknown && !unknown) first_why = why;
    unknown = unknown || a == Answer::Unknown;
  }
  r.method = queries.empty() ? "stride check + index recovery" : "stride check + index recovery + z3";
  if (unknown) {
    set_solver_limit(r, first_why);
    return r;
  }
  r.detail = "no two held positions share an element (" + std::to_string(by_recovery) + " view(s) by index recovery, " +
             std::to_string(by_index) + " by index vectors, " + std::to_string(by_strides) +
             " view pair(s) by disjoint ranges, " + std::to_string(by_offset) + " by offsets)";
  return r;
}

}  // namespace kvlayout::prove

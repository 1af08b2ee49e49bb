// covers (domain T ⊆ domain S) and carries (domain S ⊆ domain T): one solver query each for a position
// held by one side and not the other; the positions concerned are counted exactly and described by the
// coordinate ranges they span (e.g. "head 2..3"), from the domain cells.
#include "layout/domain_cells.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

// Positions held by `has` and not by `lacks`: their count and the coordinate values they span.
void describe(const layout::BoundLayout& has, const layout::BoundLayout& lacks, Counterexample& c) {
  auto set = layout::describe_positions(has, {layout::held_predicate(has), layout::held_predicate(lacks)},
                                [](const std::vector<bool>& t) { return t[0] && !t[1]; });
  if (!set) return;
  c.count = set->count;
  c.details = set->spans;
}

ObligationResult check_subset(Session& session, const Pair& pair, bool covers) {
  ObligationResult r;
  r.name = covers ? "covers" : "carries";
  r.side = Side::Pair;
  r.method = "z3";
  const layout::BoundLayout& has = covers ? pair.target : pair.source;
  const layout::BoundLayout& lacks = covers ? pair.source : pair.target;
  auto refute = [&](const std::vector<std::int64_t>& coord) {
    PositionWitness w = make_witness(pair, coord);
    bool held_by_has = (covers ? w.target : w.source)->placement != layout::Placement::NotHeld;
    bool held_by_lacks = (covers ? w.source : w.target)->placement != layout::Placement::NotHeld;
    if (!held_by_has || held_by_lacks)
      throw InternalError(r.name + " counterexample " + layout::format_coordinate(has, coord) + " does not reproduce");
    r.status = Status::Refuted;
    r.reason = covers ? Reason::MissingPositions : Reason::DroppedPositions;
    Counterexample c;
    describe(has, lacks, c);
    std::string count = c.count ? std::to_string(*c.count) + " positions" : "positions";
    r.detail = covers ? pair.target.layout->name + " holds " + count + " that " + pair.source.layout->name + " does not"
                      : pair.source.layout->name + " holds " + count + " that " + pair.target.layout->name + " drops";
    c.summary = layout::format_coordinate(has, coord) + " is held by " + has.layout->name + ", not by " + lacks.layout->name;
    c.positions.push_back(std::move(w));
    r.counterexample = c;
    return r;
  };
  auto proved_text = [&] {
    return covers ? "every position " + pair.target.layout->name + " holds, " + pair.source.layout->name + " holds"
                  : "every position " + pair.source.layout->name + " holds, " + pair.target.layout->name + " holds";
  };

  // Exact normaliser: domains that are combinations of single-coordinate bounds are compared cell by cell.
  auto cs = session.options().normalise ? layout::cells(has.coord_extents, {layout::held_predicate(has), layout::held_predicate(lacks)})
                                        : std::nullopt;
  if (cs) {
    r.method = "domain cells";
    const layout::Cell* first = nullptr;
    for (const auto& cell : *cs) {
      if (!cell.truth[0] || cell.truth[1]) continue;
      auto lo = [](const layout::Cell& c) {
        std::vector<std::int64_t> v;
        for (const auto& x : c.ranges) v.push_back(x.lo);
        return v;
      };
      if (!first || lo(cell) < lo(*first)) first = &cell;
    }
    if (!first) {
      r.detail = proved_text();
      return r;
    }
    std::vector<std::int64_t> coord;
    for (const auto& x : first->ranges) coord.push_back(x.lo);
    return refute(coord);
  }

  Encoder enc_has(session.ctx(), has, covers ? "T" : "S");
  Encoder enc_lacks(session.ctx(), lacks, covers ? "S" : "T");
  SymbolicPosition x = enc_has.position("x");
  Query s(session, r.name);
  s.add(enc_has.in_box(x) && enc_has.held(x) && !enc_lacks.held(x));
  Answer a = s.check();
  if (a == Answer::Unknown) {
    set_solver_limit(r, s.unknown_reason());
    return r;
  }
  if (a == Answer::Unsat) {
    r.detail = proved_text();
    return r;
  }
  z3::model m = minimise(s, x.coords);
  return refute(model_coords(m, x));
}

}  // namespace

ObligationResult check_covers(Session& session, const Pair& pair) { return check_subset(session, pair, true); }
ObligationResult check_carries(Session& session, const Pair& pair) { return check_subset(session, pair, false); }

}  // namespace kvlayout::prove

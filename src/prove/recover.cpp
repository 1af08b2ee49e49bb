#include "prove/recover.hpp"

#include <set>

#include "layout/interval.hpp"

namespace kvlayout::prove {
namespace {

using expr::Op;

// A fact fixed by an index value: coordinate `coord` itself (modulus 0), or its quotient or remainder
// by `modulus`.
struct Fact {
  int coord;
  std::int64_t modulus;  // 0: the coordinate itself
  bool quotient;         // with modulus > 0: true "c div m", false "c mod m"
  bool operator<(const Fact& o) const {
    return std::tie(coord, modulus, quotient) < std::tie(o.coord, o.modulus, o.quotient);
  }
};

class Recovery {
 public:
  Recovery(const layout::BoundLayout& bound, std::vector<layout::Interval> bounds) : bound_(bound), bounds_(std::move(bounds)) {}

  // Adds the facts the value of e fixes. Returns false when no rule applies (nothing is claimed then).
  bool fix(const expr::Expr& e) {
    switch (e->op) {
      case Op::Literal:
        return true;
      case Op::Coord:
        facts_.insert({static_cast<int>(e->value), 0, false});
        return true;
      case Op::Lookup:
        return fix(e->args[0]);
      case Op::Add:
      case Op::Sub: {
        // e + k or e - k: shifting by a constant loses nothing.
        if (e->args[1]->op == Op::Literal) return fix(e->args[0]);
        if (e->op == Op::Add && e->args[0]->op == Op::Literal) return fix(e->args[1]);
        if (e->op != Op::Add) return false;
        // a * K + b with b in [0, K): the value fixes both a and b (either operand order).
        for (int side = 0; side < 2; ++side) {
          const expr::Expr& scaled = e->args[static_cast<std::size_t>(side)];
          const expr::Expr& rest = e->args[static_cast<std::size_t>(1 - side)];
          std::int64_t k = 0;
          const expr::Expr* a = nullptr;
          if (!multiple(scaled, k, a)) continue;
          auto r = layout::range_of(rest, bounds_, bound_);
          if (!r || r->lo < 0 || r->hi >= k) continue;
          std::set<Fact> saved = facts_;
          if (fix(*a) && fix(rest)) return true;
          facts_ = saved;
        }
        return false;
      }
      case Op::Mul: {
        std::int64_t k = 0;
        const expr::Expr* a = nullptr;
        return multiple(e, k, a) && fix(*a);
      }
      case Op::Div:
      case Op::Mod: {
        if (e->args[0]->op != Op::Coord || e->args[1]->op != Op::Literal || e->args[1]->value <= 0) return false;
        facts_.insert({static_cast<int>(e->args[0]->value), e->args[1]->value, e->op == Op::Div});
        return true;
      }
      default:
        return false;
    }
  }

  bool recovered(int coord) const {
    if (facts_.count({coord, 0, false})) return true;
    for (const Fact& f : facts_)
      if (f.coord == coord && f.modulus > 0 && f.quotient && facts_.count({coord, f.modulus, false})) return true;
    return false;
  }

 private:
  // e = a * K (or K * a) with a literal K > 0.
  static bool multiple(const expr::Expr& e, std::int64_t& k, const expr::Expr*& a) {
    if (e->op != Op::Mul) return false;
    if (e->args[1]->op == Op::Literal && e->args[1]->value > 0) {
      k = e->args[1]->value;
      a = &e->args[0];
      return true;
    }
    if (e->args[0]->op == Op::Literal && e->args[0]->value > 0) {
      k = e->args[0]->value;
      a = &e->args[1];
      return true;
    }
    return false;
  }

  const layout::BoundLayout& bound_;
  std::vector<layout::Interval> bounds_;
  std::set<Fact> facts_;
};

}  // namespace

std::vector<std::string> unrecovered_coordinates(const layout::BoundLayout& bound, const layout::BoundTensor& tensor,
                                                 const layout::BoundView& view) {
  std::vector<layout::Interval> bounds = layout::coordinate_bounds(bound, view.holds);
  Recovery recovery(bound, bounds);
  std::vector<std::string> missing;
  for (const auto& e : view.index) {
    if (!recovery.fix(e)) {
      // An axis no rule understands fixes nothing; the others may still fix everything.
    }
  }
  for (std::size_t c = 0; c < bound.coord_names.size(); ++c) {
    bool constant_in_domain = bounds[c].lo == bounds[c].hi;
    bool selects_instance = tensor.per == static_cast<int>(c);  // instance = coord - per_first: a bijection
    if (constant_in_domain || selects_instance || recovery.recovered(static_cast<int>(c))) continue;
    missing.push_back(bound.coord_names[c]);
  }
  return missing;
}

}  // namespace kvlayout::prove

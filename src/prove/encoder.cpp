#include "prove/encoder.hpp"

#include <limits>

#include "expr/print.hpp"

namespace kvlayout::prove {

using expr::Op;

Encoder::Encoder(z3::context& ctx, const layout::BoundLayout& bound, std::string prefix, const Encoder* share_tables,
                 const std::vector<int>* table_map)
    : ctx_(ctx), bound_(bound), prefix_(std::move(prefix)) {
  if (share_tables && table_map) {
    for (int i : *table_map) {
      tables_.push_back(share_tables->tables_.at(static_cast<std::size_t>(i)));
      inverses_.push_back(share_tables->inverses_.at(static_cast<std::size_t>(i)));
    }
    return;
  }
  if (share_tables) {
    tables_ = share_tables->tables_;
    inverses_ = share_tables->inverses_;
    return;
  }
  for (const auto& t : bound.tables) {
    tables_.push_back(ctx_.function((prefix_ + "." + t.name).c_str(), ctx_.int_sort(), ctx_.int_sort()));
    inverses_.push_back(ctx_.function((prefix_ + "." + t.name + ".inverse").c_str(), ctx_.int_sort(), ctx_.int_sort()));
  }
}

Encoder::Encoder(z3::context& ctx, const layout::BoundLayout& bound, std::string prefix,
                 const std::vector<const Encoder*>& concatenate)
    : ctx_(ctx), bound_(bound), prefix_(std::move(prefix)) {
  for (const Encoder* e : concatenate) {
    tables_.insert(tables_.end(), e->tables_.begin(), e->tables_.end());
    inverses_.insert(inverses_.end(), e->inverses_.begin(), e->inverses_.end());
  }
  if (tables_.size() != bound.tables.size()) throw std::logic_error("Encoder: concatenated tables do not match the bound tables");
}

SymbolicPosition Encoder::position(const std::string& name) {
  SymbolicPosition p{name, {}};
  for (const auto& c : bound_.coord_names)
    p.coords.push_back(ctx_.int_const((prefix_ + "." + name + "." + c).c_str()));
  return p;
}

z3::expr Encoder::in_box(const SymbolicPosition& p) {
  z3::expr all = ctx_.bool_val(true);
  for (std::size_t i = 0; i < p.coords.size(); ++i)
    all = all && p.coords[i] >= 0 && p.coords[i] < constant(bound_.coord_extents[i]);
  return all;
}

z3::expr Encoder::floor_div(const z3::expr& a, const expr::Expr& divisor, const SymbolicPosition& p) {
  if (divisor->op == Op::Literal) {
    std::int64_t c = divisor->value;
    if (c > 0) return a / constant(c);
    if (c < 0) return (-a) / constant(-c);
    return constant(0);  // never evaluated where defined() holds, which check_defined() proves first
  }
  // A symbolic divisor: floor division for either sign; a zero divisor is reported by in-bounds.
  z3::expr b = value(divisor, p);
  return z3::ite(b > 0, a / b, z3::ite(b < 0, (-a) / (-b), constant(0)));
}

z3::expr Encoder::value(const expr::Expr& e, const SymbolicPosition& p) {
  switch (e->op) {
    case Op::Literal: return constant(e->value);
    case Op::Coord: return p.coords[static_cast<std::size_t>(e->value)];
    case Op::Lookup: {
      auto t = static_cast<std::size_t>(e->value);
      z3::expr entry = value(e->args[0], p);
      z3::expr v = tables_[t](entry);
      lookups_.push_back({static_cast<int>(t), entry, v});
      return v;
    }
    case Op::Neg: return -value(e->args[0], p);
    case Op::Add: return value(e->args[0], p) + value(e->args[1], p);
    case Op::Sub: return value(e->args[0], p) - value(e->args[1], p);
    case Op::Mul: return value(e->args[0], p) * value(e->args[1], p);
    case Op::Div: return floor_div(value(e->args[0], p), e->args[1], p);
    case Op::Mod: {
      z3::expr a = value(e->args[0], p);
      if (e->args[1]->op == Op::Literal && e->args[1]->value > 0) return z3::mod(a, constant(e->args[1]->value));
      return a - value(e->args[1], p) * floor_div(a, e->args[1], p);
    }
    case Op::CeilDiv: return -floor_div(-value(e->args[0], p), e->args[1], p);
    case Op::Min: {
      z3::expr a = value(e->args[0], p), b = value(e->args[1], p);
      return z3::ite(a <= b, a, b);
    }
    case Op::Max: {
      z3::expr a = value(e->args[0], p), b = value(e->args[1], p);
      return z3::ite(a >= b, a, b);
    }
    default:
      if (expr::is_boolean(e->op)) return z3::ite(truth(e, p), constant(1), constant(0));
      throw EncodeError("cannot encode `" + expr::to_string(e) + "`");
  }
}

z3::expr Encoder::truth(const expr::Expr& e, const SymbolicPosition& p) {
  switch (e->op) {
    case Op::Literal: return ctx_.bool_val(e->value != 0);
    case Op::Not: return !truth(e->args[0], p);
    case Op::And: return truth(e->args[0], p) && truth(e->args[1], p);
    case Op::Or: return truth(e->args[0], p) || truth(e->args[1], p);
    case Op::Eq: return value(e->args[0], p) == value(e->args[1], p);
    case Op::Ne: return value(e->args[0], p) != value(e->args[1], p);
    case Op::Lt: return value(e->args[0], p) < value(e->args[1], p);
    case Op::Le: return value(e->args[0], p) <= value(e->args[1], p);
    case Op::Gt: return value(e->args[0], p) > value(e->args[1], p);
    case Op::Ge: return value(e->args[0], p) >= value(e->args[1], p);
    case Op::IsPow2:
      throw EncodeError("is_pow2 of `" + expr::to_string(e->args[0]) +
                        "` depends on a coordinate; only parameters may be tested with is_pow2");
    default: return value(e, p) != 0;
  }
}

z3::expr Encoder::in_int64(const z3::expr& v) {
  return v >= constant(std::numeric_limits<std::int64_t>::min()) && v <= constant(std::numeric_limits<std::int64_t>::max());
}

z3::expr Encoder::defined(const expr::Expr& e, const SymbolicPosition& p) {
  auto operands = [&] {
    z3::expr all = ctx_.bool_val(true);
    for (const auto& a : e->args) all = all && defined(a, p);
    return all;
  };
  switch (e->op) {
    case Op::Literal: case Op::Coord: return ctx_.bool_val(true);
    // An entry inside the table reads a value in the table's range (table_axioms); an entry outside it is
    // an out-of-bounds read, which in-bounds reports.
    case Op::Lookup: return defined(e->args[0], p);
    case Op::And: return defined(e->args[0], p) && z3::implies(truth(e->args[0], p), defined(e->args[1], p));
    case Op::Or: return defined(e->args[0], p) && z3::implies(!truth(e->args[0], p), defined(e->args[1], p));
    case Op::Neg: case Op::Add: case Op::Sub: case Op::Mul: return operands() && in_int64(value(e, p));
    case Op::Div: case Op::Mod: case Op::CeilDiv: {
      const expr::Expr& d = e->args[1];
      if (d->op == Op::Literal && d->value == 0) return ctx_.bool_val(false);
      z3::expr ok = operands() && value(d, p) != 0;
      if (e->op == Op::CeilDiv)  // ceil_div(a, b) = -floor_div(-a, b): -a must fit too
        ok = ok && in_int64(-value(e->args[0], p));
      return e->op == Op::Mod ? ok : ok && in_int64(value(e, p));  // a floor modulo never leaves int64
    }
    default: return operands();  // min, max, comparisons, !, is_pow2: defined when their operands are
  }
}

z3::expr Encoder::reaches_view(std::size_t tensor, std::size_t view, const SymbolicPosition& p) {
  z3::expr d = ctx_.bool_val(true);
  for (std::size_t t = 0; t <= tensor; ++t) {
    std::size_t views = t == tensor ? view : bound_.tensors[t].views.size();
    for (std::size_t v = 0; v < views; ++v) d = d && !truth(bound_.tensors[t].views[v].holds, p);
  }
  return d;
}

z3::expr Encoder::view_domain(std::size_t tensor, std::size_t view, const SymbolicPosition& p) {
  return truth(bound_.tensors[tensor].views[view].holds, p) && reaches_view(tensor, view, p);
}

z3::expr Encoder::held(const SymbolicPosition& p) {
  z3::expr any = ctx_.bool_val(false);
  for (const auto& t : bound_.tensors)
    for (const auto& v : t.views) any = any || truth(v.holds, p);
  return any;
}

z3::expr Encoder::offset(std::size_t tensor, std::size_t view, const SymbolicPosition& p) {
  const auto& v = bound_.tensors[tensor].views[view];
  z3::expr off = constant(v.offset);
  for (std::size_t k = 0; k < v.index.size(); ++k)
    if (v.strides[k] != 0) off = off + value(v.index[k], p) * constant(v.strides[k]);
  return off;
}

z3::expr Encoder::within_axes(std::size_t tensor, std::size_t view, const SymbolicPosition& p) {
  const auto& v = bound_.tensors[tensor].views[view];
  z3::expr all = ctx_.bool_val(true);
  for (std::size_t k = 0; k < v.index.size(); ++k) {
    z3::expr i = value(v.index[k], p);
    all = all && i >= 0 && i < constant(v.extents[k]);
  }
  return all;
}

z3::expr Encoder::instance(std::size_t tensor, const SymbolicPosition& p) {
  const auto& t = bound_.tensors[tensor];
  if (t.per < 0) return constant(0);
  const z3::expr& c = p.coords[static_cast<std::size_t>(t.per)];
  return t.per_first == 0 ? c : c - constant(t.per_first);
}

z3::expr Encoder::table_axioms() {
  z3::expr all = ctx_.bool_val(true);
  for (const auto& l : lookups_) {
    const auto& t = bound_.tables[static_cast<std::size_t>(l.table)];
    z3::expr inside = l.entry >= 0 && l.entry < constant(t.length);
    z3::expr ranged = l.value >= constant(t.first) && l.value < constant(t.end);
    all = all && z3::implies(inside, ranged && inverses_[static_cast<std::size_t>(l.table)](l.value) == l.entry);
  }
  return all;
}

z3::expr Encoder::entry_outside_table(std::size_t from_lookup) {
  z3::expr any = ctx_.bool_val(false);
  for (std::size_t i = from_lookup; i < lookups_.size(); ++i) {
    const auto& l = lookups_[i];
    const auto& t = bound_.tables[static_cast<std::size_t>(l.table)];
    any = any || l.entry < 0 || l.entry >= constant(t.length);
  }
  return any;
}

}  // namespace kvlayout::prove

#include "check/family_affine.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "expr/arithmetic.hpp"
#include "expr/print.hpp"

namespace kvlayout::check {
namespace {

// coef * term over a range of values (inclusive).
struct Term {
  std::int64_t coef = 0;
  std::int64_t lo = 0, hi = 0;
  int var = -1;  // a variable's index, or -1 for a table read
  int read_of = -1;  // a table read T[var + c]: the variable it reads by (injective in it), or -1
};

struct Affine {
  std::int64_t constant = 0;
  std::map<std::string, Term> terms;  // keyed by the term's text
};

// @post nullopt unless e is constant + sum of coef * (variable | table read); overflow also gives nullopt.
bool add_linear(const FamilyPlan& plan, const Family& f, const expr::Expr& e, std::int64_t scale, Affine& out) {
  using expr::Op;
  switch (e->op) {
    case Op::Literal: out.constant = expr::checked_add(out.constant, expr::checked_mul(scale, e->value)); return true;
    case Op::Coord: {
      const auto i = static_cast<std::size_t>(e->value);
      if (i >= f.vars.size()) return false;
      Term& t = out.terms["v:" + f.vars[i]];
      t.coef = expr::checked_add(t.coef, scale);
      t.lo = f.first[i];
      t.hi = f.end[i] - 1;
      t.var = static_cast<int>(i);
      return true;
    }
    case Op::Lookup: {
      const auto& table = plan.names.tables[static_cast<std::size_t>(e->value)];
      Term& t = out.terms["t:" + expr::to_string(e)];
      t.coef = expr::checked_add(t.coef, scale);
      t.lo = table.first;
      t.hi = table.end - 1;
      const expr::Expr& a = e->args[0];
      if (a->op == Op::Coord) t.read_of = static_cast<int>(a->value);
      if (a->op == Op::Add && a->args[0]->op == Op::Coord && a->args[1]->op == Op::Literal) t.read_of = static_cast<int>(a->args[0]->value);
      if (a->op == Op::Add && a->args[1]->op == Op::Coord && a->args[0]->op == Op::Literal) t.read_of = static_cast<int>(a->args[1]->value);
      return true;
    }
    case Op::Neg: return add_linear(plan, f, e->args[0], expr::checked_neg(scale), out);
    case Op::Add: return add_linear(plan, f, e->args[0], scale, out) && add_linear(plan, f, e->args[1], scale, out);
    case Op::Sub:
      return add_linear(plan, f, e->args[0], scale, out) && add_linear(plan, f, e->args[1], expr::checked_neg(scale), out);
    case Op::Mul:
      if (e->args[0]->op == Op::Literal) return add_linear(plan, f, e->args[1], expr::checked_mul(scale, e->args[0]->value), out);
      if (e->args[1]->op == Op::Literal) return add_linear(plan, f, e->args[0], expr::checked_mul(scale, e->args[1]->value), out);
      return false;
    default: return false;
  }
}

std::optional<Affine> affine(const FamilyPlan& plan, const Family& f, const expr::Expr& e) {
  Affine a;
  try {
    if (!add_linear(plan, f, e, 1, a)) return std::nullopt;
  } catch (const expr::ArithmeticError&) {
    return std::nullopt;
  }
  return a;
}

// Dimensions of the byte map: (|stride|, extent). The variable giving the instance (if the instance is one
// variable) is left out: members that differ in it write different instances.
struct Dims {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;
  std::int64_t constant = 0;
  std::string shape;  // everything but the constant, for comparing two families
};

std::optional<Dims> dims_of(const FamilyPlan& plan, const Family& f) {
  if (f.bytes->op != expr::Op::Literal || f.bytes->value <= 0) return std::nullopt;
  int instance_var = -1;
  if (f.target.instance->op == expr::Op::Coord) instance_var = static_cast<int>(f.target.instance->value);
  else if (f.target.instance->op != expr::Op::Literal) return std::nullopt;
  auto a = affine(plan, f, f.target.offset);
  if (!a) return std::nullopt;
  Dims d;
  d.constant = a->constant;
  d.shape = expr::to_string(f.target.instance) + "|" + std::to_string(f.bytes->value);
  d.dims.push_back({1, f.bytes->value});  // the byte within the member
  std::vector<bool> covered(f.vars.size(), false);
  for (const auto& [key, t] : a->terms) {
    d.shape += "|" + key + "*" + std::to_string(t.coef) + "@" + std::to_string(t.lo) + ".." + std::to_string(t.hi);
    if (t.var == instance_var && t.var >= 0) continue;
    if (t.coef != 0 && t.var >= 0) covered[static_cast<std::size_t>(t.var)] = true;
    if (t.coef != 0 && t.read_of >= 0) covered[static_cast<std::size_t>(t.read_of)] = true;  // injective tables
    if (t.coef != 0 && t.hi > t.lo) d.dims.push_back({t.coef < 0 ? -t.coef : t.coef, t.hi - t.lo + 1});
  }
  for (std::size_t i = 0; i < f.vars.size(); ++i)
    if (!covered[i] && static_cast<int>(i) != instance_var && f.end[i] - f.first[i] > 1) return std::nullopt;  // varies, moves nothing
  return d;
}

// Mixed-radix separation: sorted by stride, each stride exceeds the span of all smaller ones.
bool separated(std::vector<std::pair<std::int64_t, std::int64_t>> dims) {
  std::sort(dims.begin(), dims.end());
  std::int64_t span = 0;
  try {
    for (const auto& [stride, extent] : dims) {
      if (stride <= span) return false;
      span = expr::checked_add(span, expr::checked_mul(stride, extent - 1));
    }
  } catch (const expr::ArithmeticError&) {
    return false;
  }
  return true;
}

}  // namespace

bool affine_distinct(const FamilyPlan& plan, const Family& f) {
  auto d = dims_of(plan, f);
  return d && separated(d->dims);
}

bool affine_distinct(const FamilyPlan& plan, const Family& f, const Family& g) {
  auto a = dims_of(plan, f), b = dims_of(plan, g);
  if (!a || !b || a->shape != b->shape || a->constant == b->constant) return false;
  auto dims = a->dims;
  dims.push_back({a->constant > b->constant ? a->constant - b->constant : b->constant - a->constant, 2});
  return separated(dims);
}

}  // namespace kvlayout::check

#include "expr/evaluate.hpp"

#include <stdexcept>

namespace kvlayout::expr {

std::int64_t apply(Op op, std::span<const std::int64_t> v) {
  switch (op) {
    case Op::Neg: return checked_neg(v[0]);
    case Op::Not: return v[0] == 0;
    case Op::Add: return checked_add(v[0], v[1]);
    case Op::Sub: return checked_sub(v[0], v[1]);
    case Op::Mul: return checked_mul(v[0], v[1]);
    case Op::Div: return floor_div(v[0], v[1]);
    case Op::Mod: return floor_mod(v[0], v[1]);
    case Op::Min: return v[0] < v[1] ? v[0] : v[1];
    case Op::Max: return v[0] > v[1] ? v[0] : v[1];
    case Op::CeilDiv: return ceil_div(v[0], v[1]);
    case Op::IsPow2: return is_pow2(v[0]);
    case Op::Eq: return v[0] == v[1];
    case Op::Ne: return v[0] != v[1];
    case Op::Lt: return v[0] < v[1];
    case Op::Le: return v[0] <= v[1];
    case Op::Gt: return v[0] > v[1];
    case Op::Ge: return v[0] >= v[1];
    case Op::And: return v[0] != 0 && v[1] != 0;
    case Op::Or: return v[0] != 0 || v[1] != 0;
    default: throw std::logic_error("apply: not an operator");
  }
}

std::int64_t evaluate(const Expr& e, const Environment& env) {
  switch (e->op) {
    case Op::Literal: return e->value;
    case Op::Coord: return env.coords[static_cast<std::size_t>(e->value)];
    case Op::Lookup: return env.lookup(static_cast<int>(e->value), evaluate(e->args[0], env));
    case Op::Name: throw std::logic_error("evaluate: unbound name `" + e->name + "`");
    case Op::And:  // short-circuit, so a guard can protect the other side
      return evaluate(e->args[0], env) != 0 && evaluate(e->args[1], env) != 0;
    case Op::Or:
      return evaluate(e->args[0], env) != 0 || evaluate(e->args[1], env) != 0;
    default: {
      std::int64_t v[2] = {0, 0};
      for (std::size_t i = 0; i < e->args.size(); ++i) v[i] = evaluate(e->args[i], env);
      return apply(e->op, std::span<const std::int64_t>(v, e->args.size()));
    }
  }
}

namespace {
bool cannot_fail(const Expr& e) {
  if (e->op == Op::Lookup || e->op == Op::Name) return false;
  if ((e->op == Op::Div || e->op == Op::Mod || e->op == Op::CeilDiv) &&
      (e->args[1]->op != Op::Literal || e->args[1]->value == 0))
    return false;
  for (const auto& a : e->args)
    if (!cannot_fail(a)) return false;
  return true;
}
}  // namespace

Expr fold(const Expr& e) {
  if (e->args.empty()) return e;
  std::vector<Expr> args;
  bool all_literal = true;
  for (const Expr& a : e->args) {
    args.push_back(fold(a));
    all_literal = all_literal && args.back()->op == Op::Literal;
  }
  if (all_literal && e->op != Op::Lookup) {
    std::int64_t v[2] = {0, 0};
    for (std::size_t i = 0; i < args.size(); ++i) v[i] = args[i]->value;
    return literal(apply(e->op, std::span<const std::int64_t>(v, args.size())));
  }
  // Identities that keep x (so no error inside x can be hidden): x / 1, x * 1, 1 * x, x + 0, 0 + x, x - 0
  // are x. x % 1 is 0 only when x cannot fail (no table read, no division by a non-constant), since
  // dropping x would drop its error. SGLang's page_size 1 makes `slot / 1` and `slot % 1` common.
  auto is = [&](std::size_t i, std::int64_t v) { return args[i]->op == Op::Literal && args[i]->value == v; };
  switch (e->op) {
    case Op::Div: if (is(1, 1)) return args[0]; break;
    case Op::Mul: if (is(1, 1)) return args[0]; if (is(0, 1)) return args[1]; break;
    case Op::Add: if (is(1, 0)) return args[0]; if (is(0, 0)) return args[1]; break;
    case Op::Sub: if (is(1, 0)) return args[0]; break;
    case Op::Mod: if ((is(1, 1) || is(1, -1)) && cannot_fail(args[0])) return literal(0); break;
    default: break;
  }
  return std::make_shared<const Node>(Node{e->op, e->value, e->name, std::move(args)});
}

namespace {
Expr replace(const Expr& e, const std::function<Expr(const std::string&)>& resolve_name,
             const std::function<int(const std::string&)>& resolve_table) {
  if (e->op == Op::Name) return resolve_name(e->name);
  std::vector<Expr> args;
  for (const Expr& a : e->args) args.push_back(replace(a, resolve_name, resolve_table));
  std::int64_t value = e->op == Op::Lookup ? resolve_table(e->name) : e->value;
  return std::make_shared<const Node>(Node{e->op, value, e->name, std::move(args)});
}
}  // namespace

Expr substitute(const Expr& e, const std::function<Expr(const std::string&)>& resolve_name,
                const std::function<int(const std::string&)>& resolve_table) {
  return fold(replace(e, resolve_name, resolve_table));
}

}  // namespace kvlayout::expr

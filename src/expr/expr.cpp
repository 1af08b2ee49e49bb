#include "expr/expr.hpp"

namespace kvlayout::expr {

Expr literal(std::int64_t value) { return std::make_shared<const Node>(Node{Op::Literal, value, {}, {}}); }
Expr name(std::string n) { return std::make_shared<const Node>(Node{Op::Name, 0, std::move(n), {}}); }
Expr coord(int index, std::string n) { return std::make_shared<const Node>(Node{Op::Coord, index, std::move(n), {}}); }
Expr lookup(int table, std::string n, Expr entry) {
  return std::make_shared<const Node>(Node{Op::Lookup, table, std::move(n), {std::move(entry)}});
}
Expr make(Op op, std::vector<Expr> args) { return std::make_shared<const Node>(Node{op, 0, {}, std::move(args)}); }

bool is_boolean(Op op) {
  switch (op) {
    case Op::Not: case Op::IsPow2:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
    case Op::And: case Op::Or:
      return true;
    default:
      return false;
  }
}

const char* spelling(Op op) {
  switch (op) {
    case Op::Neg: return "-";
    case Op::Not: return "!";
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Mod: return "%";
    case Op::Min: return "min";
    case Op::Max: return "max";
    case Op::CeilDiv: return "ceil_div";
    case Op::IsPow2: return "is_pow2";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::And: return "&&";
    case Op::Or: return "||";
    default: return "?";
  }
}

bool same(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->op != b->op || a->value != b->value || a->name != b->name || a->args.size() != b->args.size()) return false;
  for (std::size_t i = 0; i < a->args.size(); ++i)
    if (!same(a->args[i], b->args[i])) return false;
  return true;
}

}  // namespace kvlayout::expr

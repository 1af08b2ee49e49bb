#include "expr/print.hpp"

namespace kvlayout::expr {
namespace {

// Binding strength; higher binds tighter. Matches the grammar in parse.hpp.
int precedence(Op op) {
  switch (op) {
    case Op::Or: return 1;
    case Op::And: return 2;
    case Op::Eq: case Op::Ne: return 3;
    case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: return 4;
    case Op::Add: case Op::Sub: return 5;
    case Op::Mul: case Op::Div: case Op::Mod: return 6;
    case Op::Neg: case Op::Not: return 7;
    default: return 8;
  }
}

std::string print(const Expr& e, int context);

std::string operand(const Expr& e, int context) {
  std::string s = print(e, context);
  return precedence(e->op) < context ? "(" + s + ")" : s;
}

std::string print(const Expr& e, int /*context*/) {
  switch (e->op) {
    case Op::Literal:
      return e->value < 0 ? "(" + std::to_string(e->value) + ")" : std::to_string(e->value);
    case Op::Name:
    case Op::Coord:
      return e->name;
    case Op::Lookup:
      return e->name + "[" + print(e->args[0], 0) + "]";
    case Op::Neg:
    case Op::Not:
      return std::string(spelling(e->op)) + operand(e->args[0], precedence(e->op));
    case Op::Min:
    case Op::Max:
    case Op::CeilDiv:
    case Op::IsPow2: {
      std::string s = std::string(spelling(e->op)) + "(";
      for (std::size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + print(e->args[i], 0);
      return s + ")";
    }
    default: {
      // Left-associative: the right operand needs parentheses at equal precedence ("a - (b - c)").
      int p = precedence(e->op);
      return operand(e->args[0], p) + " " + spelling(e->op) + " " + operand(e->args[1], p + 1);
    }
  }
}

}  // namespace

std::string to_string(const Expr& e) { return print(e, 0); }

}  // namespace kvlayout::expr

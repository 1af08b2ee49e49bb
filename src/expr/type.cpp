#include "expr/type.hpp"

#include "expr/print.hpp"

namespace kvlayout::expr {
namespace {
void require(const Expr& operand, Type wanted, const Expr& whole) {
  Type got = type_of(operand);
  if (got != wanted)
    throw TypeError("`" + to_string(operand) + "` is " + type_name(got) + " but `" + spelling(whole->op) +
                    "` needs " + type_name(wanted));
}
}  // namespace

const char* type_name(Type t) { return t == Type::Integer ? "an integer" : "a truth value"; }

Type type_of(const Expr& e) {
  switch (e->op) {
    case Op::Literal: case Op::Name: case Op::Coord:
      return Type::Integer;
    case Op::Lookup:
      require(e->args[0], Type::Integer, e);
      return Type::Integer;
    case Op::Not:
      require(e->args[0], Type::Truth, e);
      return Type::Truth;
    case Op::And: case Op::Or:
      require(e->args[0], Type::Truth, e);
      require(e->args[1], Type::Truth, e);
      return Type::Truth;
    default:
      for (const Expr& a : e->args) require(a, Type::Integer, e);
      return is_boolean(e->op) ? Type::Truth : Type::Integer;
  }
}

}  // namespace kvlayout::expr

#include "expr/c_print.hpp"

#include <stdexcept>

namespace kvlayout::expr {
namespace {

std::string literal_c(std::int64_t v) {
  // INT64_MIN has no literal form; declarations never reach it after binding, but print it safely.
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return "INT64_C(" + std::to_string(v) + ")";
}

}  // namespace

std::string to_c(const Expr& e, const LeafPrinter& leaf) {
  auto a = [&](std::size_t i) { return to_c(e->args[i], leaf); };
  switch (e->op) {
    case Op::Literal: return literal_c(e->value);
    case Op::Coord: return leaf(*e, "");
    case Op::Lookup: return leaf(*e, a(0));
    case Op::Name: throw std::logic_error("to_c: unbound name " + e->name);
    case Op::Neg: return "(-" + a(0) + ")";
    case Op::Not: return "(!" + a(0) + ")";
    case Op::Add: return "(" + a(0) + " + " + a(1) + ")";
    case Op::Sub: return "(" + a(0) + " - " + a(1) + ")";
    case Op::Mul: return "(" + a(0) + " * " + a(1) + ")";
    case Op::Div: return "kv_floordiv(" + a(0) + ", " + a(1) + ")";
    case Op::Mod: return "kv_floormod(" + a(0) + ", " + a(1) + ")";
    case Op::CeilDiv: return "(-kv_floordiv(-" + a(0) + ", " + a(1) + "))";
    case Op::Min: return "kv_min(" + a(0) + ", " + a(1) + ")";
    case Op::Max: return "kv_max(" + a(0) + ", " + a(1) + ")";
    case Op::IsPow2: return "((" + a(0) + ") > 0 && (((" + a(0) + ") & ((" + a(0) + ") - 1)) == 0))";
    case Op::Eq: return "(" + a(0) + " == " + a(1) + ")";
    case Op::Ne: return "(" + a(0) + " != " + a(1) + ")";
    case Op::Lt: return "(" + a(0) + " < " + a(1) + ")";
    case Op::Le: return "(" + a(0) + " <= " + a(1) + ")";
    case Op::Gt: return "(" + a(0) + " > " + a(1) + ")";
    case Op::Ge: return "(" + a(0) + " >= " + a(1) + ")";
    case Op::And: return "(" + a(0) + " && " + a(1) + ")";
    case Op::Or: return "(" + a(0) + " || " + a(1) + ")";
  }
  throw std::logic_error("to_c: unknown operator");
}

std::string c_helpers(const std::string& q) {
  // [[maybe_unused]]: a kernel uses only some of them, and nvcc warns about the others.
  const std::string def = "[[maybe_unused]] " + q + (q.empty() ? "" : " ") + "static inline int64_t ";
  return def + "kv_floordiv(int64_t a, int64_t b) {\n"
               "  int64_t q = a / b;\n"
               "  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n"
               "}\n" +
         def + "kv_floormod(int64_t a, int64_t b) { return a - b * kv_floordiv(a, b); }\n" + def +
         "kv_min(int64_t a, int64_t b) { return a < b ? a : b; }\n" + def + "kv_max(int64_t a, int64_t b) { return a > b ? a : b; }\n";
}

}  // namespace kvlayout::expr

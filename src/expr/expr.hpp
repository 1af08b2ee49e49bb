#pragma once
// The one expression language shared by every stage: a declaration's index, shape, domain and requirement
// expressions are parsed once into this AST, then evaluated, encoded for Z3, or printed as C by later stages.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvlayout::expr {

enum class Op : std::uint8_t {
  Literal,   // value
  Name,      // name, not yet bound (a parameter, coordinate or table before binding)
  Coord,     // value = index of the logical coordinate, name = its name
  Lookup,    // value = index of the table, name = its name, args[0] = the entry
  Neg, Not,
  Add, Sub, Mul, Div, Mod,           // Div and Mod are floor division and floor modulo
  Min, Max, CeilDiv, IsPow2,
  Eq, Ne, Lt, Le, Gt, Ge,
  And, Or,
};

struct Node;
using Expr = std::shared_ptr<const Node>;

struct Node {
  Op op;
  std::int64_t value = 0;
  std::string name;
  std::vector<Expr> args;
};

Expr literal(std::int64_t value);
Expr name(std::string name);
Expr coord(int index, std::string name);
Expr lookup(int table, std::string name, Expr entry);
Expr make(Op op, std::vector<Expr> args);

// True for operators whose result is a truth value (comparisons, &&, ||, !, is_pow2).
// Structural equality: the same tree of operators, values, names and arguments.
bool same(const Expr& a, const Expr& b);

bool is_boolean(Op op);
// The spelling of an operator or function as written in the language ("+", "ceil_div", ...).
const char* spelling(Op op);

}  // namespace kvlayout::expr

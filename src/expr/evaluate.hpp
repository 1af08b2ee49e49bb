#pragma once
// Concrete evaluation of a bound expression (no Name nodes left) at one logical coordinate.
// Exact: overflow and division by zero throw ArithmeticError; a truth value evaluates to 0 or 1.
#include <cstdint>
#include <functional>
#include <span>

#include "expr/arithmetic.hpp"
#include "expr/expr.hpp"

namespace kvlayout::expr {

struct Environment {
  std::span<const std::int64_t> coords;
  // The entry of a table; may throw to report an entry outside the table (the caller decides how).
  // libstdc++'s std::function holds a callable of up to 16 bytes without allocating: in a per-position loop
  // (layout::locate, check's cell walk) the lookup captures one pointer to a struct of what it needs, since
  // a [&] lambda naming three locals allocates each time an Environment is made.
  std::function<std::int64_t(int table, std::int64_t entry)> lookup;
};

std::int64_t evaluate(const Expr& e, const Environment& env);

// Constant folding: every subtree without coordinates or lookups becomes a literal.
// Throws ArithmeticError when a constant subtree overflows or divides by zero.
Expr fold(const Expr& e);

// Rebuilds e with each Name node replaced by resolve_name(name) and each lookup's table index set by
// resolve_table(name); then folds. Either function may throw to reject a name.
Expr substitute(const Expr& e, const std::function<Expr(const std::string&)>& resolve_name,
                const std::function<int(const std::string&)>& resolve_table);

// Applies a binary or unary operator to already-evaluated operands (shared by evaluate and fold).
std::int64_t apply(Op op, std::span<const std::int64_t> operands);

}  // namespace kvlayout::expr

#pragma once
// The language has two types: integers (indices, sizes) and truth values (domains, requirements).
// A comparison, &&, ||, ! and is_pow2 give a truth value; && || ! take truth values; everything else
// takes and gives integers. Checking this at load time means a domain like "head" (an integer) or an index
// like "kv == 0" (a truth value) is reported with its JSON path instead of silently meaning 0/1.
#include <stdexcept>
#include <string>

#include "expr/expr.hpp"

namespace kvlayout::expr {

enum class Type { Integer, Truth };

struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// @post returns the type of e; throws TypeError naming the offending subexpression.
Type type_of(const Expr& e);
const char* type_name(Type t);

}  // namespace kvlayout::expr

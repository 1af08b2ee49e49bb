#pragma once
// Expr → text in the language's own syntax, with only the parentheses precedence needs.
// parse(to_string(e)) is e again (tested).
#include <string>

#include "expr/expr.hpp"

namespace kvlayout::expr {

std::string to_string(const Expr& e);

}  // namespace kvlayout::expr

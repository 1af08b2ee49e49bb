#pragma once
// Text → Expr. Grammar (C precedence, all binary operators left-associative):
//   or     := and ('||' and)*
//   and    := eq ('&&' eq)*
//   eq     := rel (('=='|'!=') rel)*
//   rel    := add (('<'|'<='|'>'|'>=') add)*
//   add    := mul (('+'|'-') mul)*
//   mul    := unary (('*'|'/'|'%') unary)*
//   unary  := ('-'|'!') unary | primary
//   primary:= integer | name | name '[' or ']' | func '(' or (',' or)* ')' | '(' or ')'
//   func   := min | max | ceil_div | is_pow2
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "expr/expr.hpp"

namespace kvlayout::expr {

struct ParseError : std::runtime_error {
  std::size_t column;  // 1-based position in the text where the problem was found
  ParseError(std::size_t column, const std::string& message) : std::runtime_error(message), column(column) {}
};

Expr parse(std::string_view text);

}  // namespace kvlayout::expr

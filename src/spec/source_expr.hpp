#pragma once
// An expression together with where it was written, so that any later error (binding, evaluation, proof)
// can name the JSON path and the text the user wrote.
#include <string>

#include "expr/expr.hpp"

namespace kvlayout::spec {

struct SourceExpr {
  expr::Expr expr;
  std::string path;  // JSON pointer in the declaring file
  std::string text;  // as written
};

}  // namespace kvlayout::spec

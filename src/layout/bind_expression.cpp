#include "layout/bind_expression.hpp"

#include <stdexcept>

#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "expr/parse.hpp"
#include "spec/error.hpp"
#include "spec/name_check.hpp"

namespace kvlayout::layout {

expr::Expr bind_expression(const BoundLayout& bound, const std::string& text, const std::string& file,
                           const std::string& path, bool want_truth, const std::vector<std::string>& extra) {
  spec::SourceExpr source{nullptr, path, text};
  try {
    source.expr = expr::parse(text);
  } catch (const expr::ParseError& e) {
    throw spec::SpecError(file, path, "`" + text + "`: " + e.what() + " at column " + std::to_string(e.column),
                          "an expression in the layout language (see specs/README.md)");
  }
  // Names: the coordinates and extras, the layout's parameters and the cache shape's, and its tables.
  spec::Scope scope;
  scope.coords = bound.coord_names;
  scope.coords.insert(scope.coords.end(), extra.begin(), extra.end());
  for (const auto& [name, value] : bound.values) scope.params.push_back(name);
  for (const auto& t : bound.tables) scope.tables.push_back(t.name);
  spec::check_expression(source, scope, want_truth ? expr::Type::Truth : expr::Type::Integer, file);
  try {
    return expr::substitute(
        source.expr,
        [&](const std::string& n) -> expr::Expr {
          for (std::size_t i = 0; i < bound.coord_names.size(); ++i)
            if (bound.coord_names[i] == n) return expr::coord(static_cast<int>(i), n);
          for (std::size_t i = 0; i < extra.size(); ++i)
            if (extra[i] == n) return expr::coord(static_cast<int>(bound.coord_names.size() + i), n);
          return expr::literal(bound.values.at(n));
        },
        [&](const std::string& n) -> int {
          for (std::size_t i = 0; i < bound.tables.size(); ++i)
            if (bound.tables[i].name == n) return static_cast<int>(i);
          throw std::logic_error("table " + n + " passed the name check but is not bound");
        });
  } catch (const expr::ArithmeticError& a) {
    throw spec::SpecError(file, path, "`" + text + "`, which fails: " + std::string(a.what()) + " on cache shape " +
                                          bound.cache.name,
                          "an expression that evaluates on this cache shape");
  }
}

}  // namespace kvlayout::layout

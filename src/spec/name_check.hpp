#pragma once
// Checks that an expression refers only to names visible where it is written, and has the right type.
#include <string>
#include <vector>

#include "expr/type.hpp"
#include "spec/source_expr.hpp"

namespace kvlayout::spec {

struct Scope {
  std::vector<std::string> coords;  // logical coordinates (index and domain expressions only)
  std::vector<std::string> params;  // layout parameters
  std::vector<std::string> tables;  // tables (index expressions only, as name[entry])
  bool cache_params = true;         // the standard cache-shape parameter names
};

// @post every Name in e is visible in scope, every lookup names a table in scope, every is_pow2 tests an
// expression over parameters only (the prover cannot encode it over coordinates), and e has type `want`;
// otherwise throws SpecError(file, e.path, ...) naming the offending name and what was visible.
void check_expression(const SourceExpr& e, const Scope& scope, expr::Type want, const std::string& file);

// True for a name expressions can refer to: letters, digits and _, not starting with a digit.
bool is_identifier(const std::string& name);

// The names (not tables) an expression refers to, in first-use order.
std::vector<std::string> referenced_names(const expr::Expr& e);

}  // namespace kvlayout::spec

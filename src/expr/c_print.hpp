#pragma once
// Expr -> C/C++/CUDA source, for generated kernels. Floor division and modulo are printed through the
// helpers kv_floordiv / kv_floormod (the generated file defines them), so the printed code means exactly
// what the language means for negative operands too; `leaf` prints coordinates and table lookups.
#include <functional>
#include <string>

#include "expr/expr.hpp"

namespace kvlayout::expr {

// `leaf(node, printed_entry)` prints an Op::Coord node (printed_entry empty) or an Op::Lookup node given
// its already-printed entry expression.
using LeafPrinter = std::function<std::string(const Node& node, const std::string& entry)>;

std::string to_c(const Expr& e, const LeafPrinter& leaf);

// The helper definitions the printed code relies on (host and device qualifiers given by `qualifiers`).
std::string c_helpers(const std::string& qualifiers);

}  // namespace kvlayout::expr

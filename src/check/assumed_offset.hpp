#pragma once
// ASSUMED written inline, as connector authors think: one element-offset formula for a single tensor of
// REAL (`--assumed-offset 'kv * NB * BS * H * D + block_table[token / BS] * BS * H * D + ...'`), over the
// content's coordinates, REAL's parameters and tables. It becomes an in-memory layout with one 1-D view of
// REAL's tensor allocation (index = the formula), so the refinement check treats it like a declaration.
#include <optional>
#include <string>

#include "layout/bound_layout.hpp"

namespace kvlayout::check {

struct AssumedOffset {
  std::string offset;                   // --assumed-offset: an integer expression (elements)
  std::optional<std::string> tensor;    // --assumed-tensor: REAL's tensor name (default: its only tensor)
  std::optional<std::string> instance;  // --assumed-instance: a coordinate name or 0 (default: REAL's rule)
  std::optional<std::string> holds;     // --assumed-holds: a truth value (default: every position)
};

// @pre real.fits(). Throws SpecError naming the flag for a parse error, an unknown name, a tensor REAL
// lacks (or none named when REAL has several), or an instance rule that is not a coordinate or 0.
// @post the result fits, has REAL's content, parameters, tables, dtype and scale, and one tensor.
layout::BoundLayout assumed_from_offset(const layout::BoundLayout& real, const AssumedOffset& assumed);

}  // namespace kvlayout::check

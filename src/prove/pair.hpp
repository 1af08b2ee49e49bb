#pragma once
// The two layouts of a translation S -> T, bound to one cache shape, as the obligations see them.
#include <vector>

#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"
#include "verdict/counterexample.hpp"
#include "verdict/obligation.hpp"

namespace kvlayout::prove {

struct Pair {
  const layout::BoundLayout& source;
  const layout::BoundLayout& target;

  bool same_content() const;
  const layout::BoundLayout& side(Side s) const { return s == Side::Target ? target : source; }
  // The other side when it fits and holds the same content (so a coordinate means the same there).
  const layout::BoundLayout* other(Side s) const;
};

// A position located on both sides: on `side` with `tables`, on the other side (if comparable) with
// identity tables. Records the table entries each address read.
PositionWitness make_witness(const Pair& pair, Side side, const std::vector<std::int64_t>& coord,
                             const layout::BlockTables& tables);

// A position located on both sides with identity tables (for pair obligations).
PositionWitness make_witness(const Pair& pair, const std::vector<std::int64_t>& coord);

}  // namespace kvlayout::prove

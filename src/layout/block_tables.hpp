#pragma once
// Concrete contents of a bound layout's tables (for evaluation and enumeration; a proof never fixes them).
#include <cstdint>
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

struct BlockTables {
  std::vector<std::vector<std::int64_t>> entries;  // one list per table, in declaration order
};

// entry i = first + i.
BlockTables identity_tables(const BoundLayout& bound);
// entry i = first + (length - 1 - i).
BlockTables reversed_tables(const BoundLayout& bound);
// A seeded random injective choice: `length` distinct values drawn from the whole range [first, end).
BlockTables random_tables(const BoundLayout& bound, std::uint64_t seed);

// Replaces the table `name` with `entries`. @post the table has its declared length, its entries lie in its
// range and are distinct; otherwise throws SpecError (path "--table NAME").
void set_table(const BoundLayout& bound, BlockTables& tables, const std::string& name,
               const std::vector<std::int64_t>& entries);

}  // namespace kvlayout::layout

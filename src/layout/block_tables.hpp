#pragma once
// Concrete contents of a bound layout's tables (for evaluation and enumeration; a proof never fixes them).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

struct BlockTables {
  // One per declared table, in declaration order. An identity table stores no entries (entry i is
  // first + i), so a default table costs nothing however long the cache is.
  struct Table {
    std::int64_t first = 0;
    bool identity = true;
    std::vector<std::int64_t> entries;  // when not identity
    // When identity: entries that differ from first + i (kept injective by construction), so a table
    // fixed at a few entries costs nothing however long it is.
    std::map<std::int64_t, std::int64_t> overrides;
    std::int64_t at(std::int64_t i) const {
      if (!identity) return entries[static_cast<std::size_t>(i)];
      auto it = overrides.find(i);
      return it == overrides.end() ? first + i : it->second;
    }
  };
  std::vector<Table> tables;

  // @pre 0 <= i < the table's length
  std::int64_t entry(std::size_t table, std::int64_t i) const { return tables[table].at(i); }
};

// The entries as the emitted kernels' C ABI takes them: one int32 array per table, in declaration order.
// @pre every entry fits in int32 (a range the kernel header documents as int32 entries)
std::vector<std::vector<std::int32_t>> int32_entries(const BoundLayout& bound, const BlockTables& tables);

// entry i = first + i.
BlockTables identity_tables(const BoundLayout& bound);
// entry i = first + (length - 1 - i).
BlockTables reversed_tables(const BoundLayout& bound);
// A seeded random injective choice: `length` distinct values drawn from the whole range [first, end).
BlockTables random_tables(const BoundLayout& bound, std::uint64_t seed);

// Tables whose entries in `fixed` (one map per table: entry -> value) take the given values and whose other
// entries complete them injectively: the identity, with the values `fixed` takes swapped out of the way.
// @pre the fixed entries are inside their tables, their values inside the ranges and distinct per table
// (else std::invalid_argument).
BlockTables tables_with(const BoundLayout& bound, const std::vector<std::map<std::int64_t, std::int64_t>>& fixed);

// Replaces the table `name` with `entries`. @post the table has its declared length, its entries lie in its
// range and are distinct; otherwise throws SpecError (path "--table NAME").
void set_table(const BoundLayout& bound, BlockTables& tables, const std::string& name,
               const std::vector<std::int64_t>& entries);

}  // namespace kvlayout::layout

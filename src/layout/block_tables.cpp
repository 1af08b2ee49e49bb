#include "layout/block_tables.hpp"

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "spec/error.hpp"

namespace kvlayout::layout {

BlockTables identity_tables(const BoundLayout& bound) {
  BlockTables t;
  for (const auto& table : bound.tables) t.tables.push_back({table.first, true, {}, {}});
  return t;
}

BlockTables tables_with(const BoundLayout& bound, const std::vector<std::map<std::int64_t, std::int64_t>>& fixed) {
  BlockTables tables = identity_tables(bound);
  for (std::size_t i = 0; i < bound.tables.size() && i < fixed.size(); ++i) {
    const BoundTable& bt = bound.tables[i];
    BlockTables::Table& t = tables.tables[i];
    std::set<std::int64_t> values;
    for (const auto& [entry, value] : fixed[i]) {
      if (entry < 0 || entry >= bt.length || value < bt.first || value >= bt.end || !values.insert(value).second)
        throw std::invalid_argument("table " + bt.name + ": entry " + std::to_string(entry) + " = " + std::to_string(value) +
                                    " is outside the table, outside its range, or repeats a value");
    }
    for (const auto& [entry, value] : fixed[i]) {
      const std::int64_t current = t.at(entry);
      if (current == value) continue;
      // Whoever holds `value` now takes `current` (a swap keeps the table injective).
      std::int64_t holder = -1;
      for (const auto& [e, v] : t.overrides)
        if (v == value) holder = e;
      if (holder < 0 && value - bt.first < bt.length && !t.overrides.count(value - bt.first)) holder = value - bt.first;
      if (holder >= 0) t.overrides[holder] = current;
      t.overrides[entry] = value;
    }
  }
  return tables;
}

BlockTables reversed_tables(const BoundLayout& bound) {
  BlockTables t;
  for (const auto& table : bound.tables) {
    std::vector<std::int64_t> e(static_cast<std::size_t>(table.length));
    for (std::int64_t i = 0; i < table.length; ++i) e[static_cast<std::size_t>(i)] = table.first + table.length - 1 - i;
    t.tables.push_back({table.first, false, std::move(e), {}});
  }
  return t;
}

BlockTables random_tables(const BoundLayout& bound, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  BlockTables t;
  for (const auto& table : bound.tables) {
    // Floyd's sampling: `length` distinct values from [first, end) without materialising the range.
    std::unordered_set<std::int64_t> chosen;
    std::vector<std::int64_t> e;
    const std::int64_t n = table.end - table.first;
    for (std::int64_t j = n - table.length; j < n; ++j) {
      std::int64_t r = std::uniform_int_distribution<std::int64_t>(0, j)(rng);
      std::int64_t pick = chosen.count(r) ? j : r;
      chosen.insert(pick);
      e.push_back(table.first + pick);
    }
    std::shuffle(e.begin(), e.end(), rng);
    t.tables.push_back({table.first, false, std::move(e), {}});
  }
  return t;
}

void set_table(const BoundLayout& bound, BlockTables& tables, const std::string& name,
               const std::vector<std::int64_t>& entries) {
  const std::string where = "--table " + name;
  for (std::size_t i = 0; i < bound.tables.size(); ++i) {
    const BoundTable& t = bound.tables[i];
    if (t.name != name) continue;
    if (static_cast<std::int64_t>(entries.size()) != t.length)
      throw spec::SpecError("", where, std::to_string(entries.size()) + " entries",
                            std::to_string(t.length) + " entries (the table's length on cache shape " +
                                bound.cache.name + ")");
    std::set<std::int64_t> seen;
    for (std::size_t k = 0; k < entries.size(); ++k) {
      std::int64_t v = entries[k];
      if (v < t.first || v >= t.end)
        throw spec::SpecError("", where, "entry " + std::to_string(k) + " = " + std::to_string(v),
                              "a value in [" + std::to_string(t.first) + ", " + std::to_string(t.end) + ")");
      if (!seen.insert(v).second)
        throw spec::SpecError("", where, "the value " + std::to_string(v) + " twice",
                              "distinct entries (a block table is injective)");
    }
    tables.tables[i] = {t.first, false, entries, {}};
    return;
  }
  std::string names;
  for (const auto& t : bound.tables) names += (names.empty() ? "" : ", ") + t.name;
  throw spec::SpecError("", where, "no table named \"" + name + "\" in " + bound.layout->name,
                        names.empty() ? "no --table (this layout has no tables)" : "one of: " + names);
}

std::vector<std::vector<std::int32_t>> int32_entries(const BoundLayout& bound, const BlockTables& tables) {
  std::vector<std::vector<std::int32_t>> out;
  for (std::size_t t = 0; t < bound.tables.size(); ++t) {
    std::vector<std::int32_t> entries;
    entries.reserve(static_cast<std::size_t>(bound.tables[t].length));
    for (std::int64_t i = 0; i < bound.tables[t].length; ++i) entries.push_back(static_cast<std::int32_t>(tables.entry(t, i)));
    out.push_back(std::move(entries));
  }
  return out;
}

}  // namespace kvlayout::layout

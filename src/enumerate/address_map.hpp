#pragma once
// Every position of a small cache located once under one choice of block tables: the enumeration's view
// of a layout. Positions are numbered row-major over the coordinate box; storage elements are numbered
// across all tensor instances (tensor base + instance * size + offset).
#include <cstdint>
#include <string>
#include <vector>

#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::enumerate {

inline constexpr std::int64_t kNotHeld = -1;
inline constexpr std::int64_t kOutOfBounds = -2;

struct AddressMap {
  std::vector<std::int64_t> element;      // per position: storage element, kNotHeld or kOutOfBounds
  std::vector<std::int64_t> tensor_base;  // first storage element of each tensor's instance 0
  std::int64_t storage = 0;               // storage elements in all
  std::int64_t out_of_bounds = 0;
  std::int64_t first_out_of_bounds = -1;  // position index
};

// @pre bound.fits(); the box is small enough to enumerate (the caller's choice: the `small` cache).
AddressMap map_addresses(const layout::BoundLayout& bound, const layout::BlockTables& tables);

// Row-major position index <-> coordinate.
std::int64_t box_size(const layout::BoundLayout& bound);
std::vector<std::int64_t> coordinate_of(const layout::BoundLayout& bound, std::int64_t position);

// The three table choices every paged side is checked with: identity, reversed, seeded random.
std::vector<layout::BlockTables> table_choices(const layout::BoundLayout& bound);
std::string table_choice_name(std::size_t i);

}  // namespace kvlayout::enumerate

#pragma once
// The concrete evaluator: the address of one logical coordinate under a bound layout and concrete tables.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

struct Address {
  int tensor = -1;
  int view = -1;
  std::int64_t instance = 0;
  std::int64_t offset = 0;            // element offset within the instance
  std::vector<std::int64_t> index;    // the view's index on each axis
};

enum class Placement { Held, NotHeld, OutOfBounds };

struct TableRead {
  int table = 0;
  std::int64_t entry = 0;
  std::int64_t value = 0;
};

struct Location {
  Placement placement = Placement::NotHeld;
  Address address;                    // meaningful when Held (and as far as computed when OutOfBounds)
  std::string violation;              // when OutOfBounds: which index or table entry left its range
  std::vector<TableRead> reads;       // the table entries the address used
};

// @pre bound.fits(); coord has one value per coordinate within its extent (else SpecError).
// The first view (declaration order) whose domain holds the coordinate stores it.
// Throws SpecError when an index expression divides by zero or overflows at this coordinate.
Location locate(const BoundLayout& bound, std::span<const std::int64_t> coord, const BlockTables& tables);

std::int64_t byte_offset(const BoundLayout& bound, const Address& a);

// "(layer 1, V, token 7, head 2, dim 5)" for kv-heads; "(layer 0, token 3, latent 17)" otherwise alike.
std::string format_coordinate(const BoundLayout& bound, std::span<const std::int64_t> coord);

}  // namespace kvlayout::layout

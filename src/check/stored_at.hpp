#pragma once
// What a layout stores at one element of one tensor instance, under concrete block tables: the inverse of
// the address function at one point. Used to explain a counterexample ("ASSUMED puts P at kv_cache[0]
// element 16384, where REAL stores Q"; "the plan writes padding"). Decided by the solver with the tables
// fixed to their concrete entries, so "padding" is a proof that no held position lives there, not a
// failed search; the position found is re-checked with layout::locate.
#include <cstdint>
#include <string>
#include <vector>

#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

struct StoredAt {
  enum class Kind { Position, Padding, PastAllocation, Unknown } kind = Kind::Unknown;
  std::vector<std::int64_t> coord;  // when Position
  layout::Location location;        // when Position: locate(bound, coord, tables), held at the asked element
  std::string detail;               // when Unknown: why (solver limit); when PastAllocation: the size
};

// @pre bound.fits(); 0 <= tensor < bound.tensors.size().
// @post Position: locate(bound, coord, tables) is Held at (tensor, instance, element). Padding: the solver
// proved no held position has that address (the element is inside the allocation). PastAllocation: the
// instance or the element lies outside the tensor's allocation (no solver asked).
StoredAt stored_at(const layout::BoundLayout& bound, const layout::BlockTables& tables, int tensor,
                   std::int64_t instance, std::int64_t element, const prove::ProveOptions& options = {});

}  // namespace kvlayout::check

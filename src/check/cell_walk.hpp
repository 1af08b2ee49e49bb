#pragma once
// Walking one cell of the emitter's move plan (emit::Plan) for the expected move: which modes are iterated
// and which form the run, coordinates from digit values, and each side's element offset at a loop
// iteration under concrete tables. Internal to expected_move.cpp and run_positions.cpp.
#include <cstdint>
#include <vector>

#include "check/plan_storage.hpp"
#include "emit/plan.hpp"
#include "expr/expr.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check::move_walk {

// What iterating one cell needs, computed once.
struct CellWalk {
  const emit::Cell* cell = nullptr;
  std::vector<int> iterated;                 // modes outside the run, outermost first
  std::vector<std::int64_t> run_extent;      // per run mode, least significant first
  std::vector<std::int64_t> run_span;        // per coordinate: how far the run moves it
  std::vector<int> guarded;                  // coordinates checked against their cell's upper end
  std::vector<int> scope_coords;             // coordinates the scope reads
};

CellWalk walk_of(const emit::Cell& cell, const expr::Expr& scope);

// A coordinate's value from its digits: lo + sum(weight * digit) (emit/plan.cpp's split_into_modes).
std::vector<std::int64_t> coords_of(const emit::Cell& cell, const std::vector<std::int64_t>& vals);
// The same into `coord` (resized to the cell's coordinates), so a walk can reuse one buffer: the walk visits
// every loop iteration of a production cache, and an allocation per iteration dominated it.
void coords_into(const emit::Cell& cell, const std::vector<std::int64_t>& vals, std::vector<std::int64_t>& coord);

// One side's element offset and instance at the modes' values (the run's modes at 0).
struct SidePoint {
  std::int64_t instance = 0;
  std::int64_t element = 0;
};

// Throws SpecError when the side's layout reads a table outside its length there.
SidePoint side_point(const emit::SideForm& f, const std::vector<std::int64_t>& vals, const std::vector<std::int64_t>& coord,
                     const layout::BoundLayout& b, const layout::BlockTables& tables);

// Whether `elements` elements from a side point lie inside the allocation (slack may not).
bool fits(const SidePoint& p, std::int64_t first, std::int64_t elements, const emit::SideForm& f, const layout::BoundLayout& b);

// The line byte of `elements` elements from a side point; throws SpecError when they leave the allocation.
std::int64_t line_byte(const SidePoint& p, std::int64_t first, std::int64_t elements, const emit::SideForm& f,
                       const layout::BoundLayout& b, const StorageLine& line, const std::vector<std::int64_t>& coord);

}  // namespace kvlayout::check::move_walk

#pragma once
// The move a correct plan performs, as run arithmetic: for every in-scope position both layouts hold, the
// target bytes that must receive the source bytes of the same position, as intervals of contiguous bytes
// (one per run contiguous in both layouts, split only where the scope changes inside a run). Derived from
// the emitter's move plan (emit::make_plan: cells, mixed-radix modes, affine side forms plus table atoms,
// the common contiguous run) evaluated under the plan's concrete block tables. Cross-checked byte for byte
// against layout::locate over every position in tests/check/plan_check_test.cpp.
#include <cstdint>
#include <vector>

#include "check/plan_storage.hpp"
#include "emit/plan.hpp"
#include "expr/expr.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

// Target line bytes [dst, dst + bytes) must receive source line bytes [src, src + bytes). Its positions are
// elements first_element, first_element + 1, ... of the run of loop iteration `ordinal` of cell `cell`.
struct ExpectedRun {
  std::int64_t dst = 0;
  std::int64_t src = 0;
  std::int64_t bytes = 0;
  std::int64_t ordinal = 0;
  std::int64_t first_element = 0;
  int cell = 0;
  // The slack of a partial last block: positions past num_tokens inside the last block's capacity. Held by
  // neither side (padding), but a whole-block copy writes them from the same slack of the source; that is
  // allowed (when the scope holds there), never required, and any other write to them is FRAME_VIOLATION.
  bool slack = false;
};

struct ExpectedMove {
  emit::Plan plan;
  std::vector<std::vector<int>> iterated;  // per cell: the modes outside the run, outermost first
  std::vector<ExpectedRun> runs;           // sorted by dst, disjoint
  std::int64_t positions = 0;              // in-scope positions both hold (slack not counted)
  // In-scope positions TARGET holds and SOURCE does not: no plan can write them right.
  std::int64_t missing = 0;
  std::vector<std::int64_t> missing_sample;
  // Loop iterations that lie in the slack of a partial last block, counted from the coordinates alone (before
  // any table is read, fitted or scoped): 0 means no block table gives the pair any slack at all.
  std::int64_t slack_iterations = 0;
};

// @pre both fit, one content (coordinate names equal); scope bound against target or nullptr (= all held).
// Throws emit::EmitError when the pair has no run structure the emitter understands (the caller answers
// UNKNOWN), SpecError when a layout places a position outside its tensor or reads a table out of range.
ExpectedMove expected_move(const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const layout::BlockTables& source_tables, const layout::BlockTables& target_tables,
                           const expr::Expr& scope, const StorageLine& source_line, const StorageLine& target_line);

// The logical position of element `element` (counted from the run's first) of expected run `run`.
std::vector<std::int64_t> position_at(const ExpectedMove& move, const layout::BoundLayout& bound, const ExpectedRun& run,
                                      std::int64_t element);

}  // namespace kvlayout::check

namespace kvlayout::check {
// One coordinate of position_at(move, bound, run, element), without building the whole position.
std::int64_t coordinate_at(const ExpectedMove& move, const ExpectedRun& run, std::int64_t element, int coordinate);
}  // namespace kvlayout::check

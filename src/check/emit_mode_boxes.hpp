#pragma once
// Plan emit, phase 1: each move-plan cell, cut to its coordinates' real ranges (a partial last block, a
// --scope), as boxes of mode values; a coordinate cut short leaves the contiguous run, so the run stays
// whole in every member. Internal to plan_emit_families.cpp (phase 2 turns each box into a family).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"
#include "layout/interval.hpp"

namespace kvlayout::check::emit_boxes {

using Range = std::pair<std::int64_t, std::int64_t>;  // [first, end)
using ModeBox = std::vector<Range>;                    // one range per mode of a cell

// The value of coordinate `cc` is base + sum(mode * weight) over its digits.
std::int64_t coordinate_base(const emit::Cell& cell, const emit::CellCoordinate& cc);

// Every box of mode values of `cell` whose coordinates lie in `ranges` (inclusive, one per coordinate).
std::vector<ModeBox> boxes_of(const emit::Cell& cell, const std::vector<layout::Interval>& ranges);

// The coordinate boxes of the scope (the whole box without one). A scope that is not a combination of
// single-coordinate bounds is a SpecError at --scope.
std::vector<std::vector<layout::Interval>> scope_boxes(const layout::BoundLayout& T, const std::optional<std::string>& scope);

}  // namespace kvlayout::check::emit_boxes

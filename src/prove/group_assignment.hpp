#pragma once
// The assignment of a group translation, computed exactly from the domain cells of the instances' held
// predicates (no enumeration of positions): for each target instance, which source instance feeds each
// (layer, head) box, which positions no source instance holds, and which source positions no target
// instance holds. Internal to prove_group; its results are then proven piece by piece.
#include <optional>
#include <vector>

#include "layout/bound_layout.hpp"
#include "prove/group.hpp"

namespace kvlayout::prove {

struct GroupCells {
  std::vector<RankAssignment> assignment;
  // A target instance's position no source instance holds (lowest cell corner) and how many, if any.
  std::optional<std::pair<std::size_t, std::vector<std::int64_t>>> uncovered;
  std::int64_t uncovered_count = 0;
  // A source instance's position no target instance holds, and how many (over all source instances).
  std::optional<std::pair<std::size_t, std::vector<std::int64_t>>> dropped;
  std::int64_t dropped_count = 0;
  // A (layer, head) box that every target position in it is held by some source instance, but no single
  // one holds all of it (ownership that depends on other coordinates): the assignment cannot be by box.
  std::optional<std::pair<std::size_t, std::vector<std::int64_t>>> split;
};

// nullopt when a held predicate is not a combination of single-coordinate bounds (see domain_cells.hpp).
// @pre every instance fits and all hold the same content (same coordinates and extents).
std::optional<GroupCells> group_cells(const std::vector<const layout::BoundLayout*>& source,
                                      const std::vector<const layout::BoundLayout*>& target);

}  // namespace kvlayout::prove

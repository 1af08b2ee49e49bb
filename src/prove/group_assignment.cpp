#include "prove/group_assignment.hpp"

#include <algorithm>
#include <map>

#include "layout/domain_cells.hpp"

namespace kvlayout::prove {
namespace {

std::vector<std::int64_t> corner(const layout::Cell& c) {
  std::vector<std::int64_t> v;
  for (const auto& r : c.ranges) v.push_back(r.lo);
  return v;
}

// Keeps the position with the smallest coordinates (so counterexamples are minimal and deterministic).
void keep_least(std::optional<std::pair<std::size_t, std::vector<std::int64_t>>>& slot, std::size_t member,
                std::vector<std::int64_t> coord) {
  if (!slot || coord < slot->second || (coord == slot->second && member < slot->first)) slot = {{member, std::move(coord)}};
}

// A box in (layer, head); an absent coordinate is the interval [0, 0].
struct Box {
  layout::Interval layers, heads;
  bool operator<(const Box& o) const {
    return std::tie(layers.lo, layers.hi, heads.lo, heads.hi) < std::tie(o.layers.lo, o.layers.hi, o.heads.lo, o.heads.hi);
  }
};

// Merges boxes that share one range and touch in the other, until none do.
std::vector<Box> merge(std::vector<Box> boxes) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::sort(boxes.begin(), boxes.end());
    for (std::size_t i = 0; i < boxes.size() && !changed; ++i)
      for (std::size_t j = i + 1; j < boxes.size() && !changed; ++j) {
        Box& a = boxes[i];
        const Box& b = boxes[j];
        bool same_heads = a.heads.lo == b.heads.lo && a.heads.hi == b.heads.hi;
        bool same_layers = a.layers.lo == b.layers.lo && a.layers.hi == b.layers.hi;
        if (same_heads && (b.layers.lo == a.layers.hi + 1 || a.layers.lo == b.layers.hi + 1)) {
          a.layers = {std::min(a.layers.lo, b.layers.lo), std::max(a.layers.hi, b.layers.hi)};
          changed = true;
        } else if (same_layers && (b.heads.lo == a.heads.hi + 1 || a.heads.lo == b.heads.hi + 1)) {
          a.heads = {std::min(a.heads.lo, b.heads.lo), std::max(a.heads.hi, b.heads.hi)};
          changed = true;
        }
        if (changed) boxes.erase(boxes.begin() + static_cast<std::ptrdiff_t>(j));
      }
  }
  std::sort(boxes.begin(), boxes.end());
  return boxes;
}

}  // namespace

std::optional<GroupCells> group_cells(const std::vector<const layout::BoundLayout*>& source,
                                      const std::vector<const layout::BoundLayout*>& target) {
  GroupCells out;
  const layout::BoundLayout& any = *target.front();
  const int layer = any.coord_index("layer");
  const int head = any.coord_index("head");
  auto project = [&](const layout::Cell& c) {
    Box b{{0, 0}, {0, 0}};
    if (layer >= 0) b.layers = c.ranges[static_cast<std::size_t>(layer)];
    if (head >= 0) b.heads = c.ranges[static_cast<std::size_t>(head)];
    return b;
  };
  std::vector<expr::Expr> source_held, target_held;
  for (const auto* s : source) source_held.push_back(layout::held_predicate(*s));
  for (const auto* t : target) target_held.push_back(layout::held_predicate(*t));

  // Target side: for each target instance, the cells it holds and the source instances holding each.
  for (std::size_t q = 0; q < target.size(); ++q) {
    std::vector<expr::Expr> predicates{target_held[q]};
    predicates.insert(predicates.end(), source_held.begin(), source_held.end());
    auto cs = layout::cells(any.coord_extents, predicates);
    if (!cs) return std::nullopt;
    // Per (layer, head) box: the source instances that hold every target position in it.
    std::map<Box, std::vector<bool>> feeds;
    for (const auto& c : *cs) {
      if (!c.truth[0]) continue;
      bool held_somewhere = false;
      for (std::size_t r = 0; r < source.size(); ++r) held_somewhere = held_somewhere || c.truth[1 + r];
      if (!held_somewhere) {
        keep_least(out.uncovered, q, corner(c));
        out.uncovered_count += c.volume;
        continue;
      }
      auto [it, fresh] = feeds.try_emplace(project(c), std::vector<bool>(source.size(), true));
      for (std::size_t r = 0; r < source.size(); ++r) it->second[r] = it->second[r] && c.truth[1 + r];
      (void)fresh;
    }
    std::map<std::size_t, std::vector<Box>> by_source;
    for (const auto& [box, holders] : feeds) {
      auto first = std::find(holders.begin(), holders.end(), true);
      if (first == holders.end()) {
        std::vector<std::int64_t> coord(any.coord_extents.size(), 0);
        if (layer >= 0) coord[static_cast<std::size_t>(layer)] = box.layers.lo;
        if (head >= 0) coord[static_cast<std::size_t>(head)] = box.heads.lo;
        keep_least(out.split, q, coord);
        continue;
      }
      by_source[static_cast<std::size_t>(first - holders.begin())].push_back(box);
    }
    for (const auto& [r, boxes] : by_source)
      for (const Box& b : merge(boxes)) {
        RankAssignment a;
        a.target_member = q;
        a.source_member = r;
        if (layer >= 0) a.layers = RankRange{b.layers.lo, b.layers.hi + 1};
        if (head >= 0) a.heads = RankRange{b.heads.lo, b.heads.hi + 1};
        out.assignment.push_back(a);
      }
  }

  // Source side: positions some source instance holds and no target instance does.
  for (std::size_t r = 0; r < source.size(); ++r) {
    std::vector<expr::Expr> predicates{source_held[r]};
    predicates.insert(predicates.end(), target_held.begin(), target_held.end());
    auto cs = layout::cells(any.coord_extents, predicates);
    if (!cs) return std::nullopt;
    for (const auto& c : *cs) {
      if (!c.truth[0]) continue;
      bool kept = false;
      for (std::size_t q = 0; q < target.size(); ++q) kept = kept || c.truth[1 + q];
      if (kept) continue;
      keep_least(out.dropped, r, corner(c));
      out.dropped_count += c.volume;
    }
  }
  return out;
}

}  // namespace kvlayout::prove

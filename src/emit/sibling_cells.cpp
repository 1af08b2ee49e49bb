#include "emit/sibling_cells.hpp"

#include <algorithm>
#include <cstdlib>

namespace kvlayout::emit {

namespace {

bool same_modes(const Cell& a, const Cell& b) {
  if (a.modes.size() != b.modes.size()) return false;
  for (std::size_t m = 0; m < a.modes.size(); ++m) {
    const Mode &x = a.modes[m], &y = b.modes[m];
    if (x.var != y.var || x.coord != y.coord || x.weight != y.weight || x.extent != y.extent || x.top_of_token != y.top_of_token) return false;
  }
  return true;
}

bool same_atoms(const std::vector<Atom>& a, const std::vector<Atom>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].coef != b[i].coef || a[i].modes != b[i].modes || !expr::same(a[i].e, b[i].e)) return false;
  return true;
}

// Everything of a side that the printed nest reads, but for the constant and the instance index.
bool same_side(const SideForm& a, const SideForm& b) {
  return a.stride == b.stride && same_atoms(a.atoms, b.atoms) && a.instance_coord == b.instance_coord &&
         a.instance_coord_first == b.instance_coord_first;
}

bool feeds_lookup(const Cell& cell, const CellCoordinate& c) {
  return std::any_of(c.modes.begin(), c.modes.end(), [&](int m) { return read_by_atoms(cell.source, m) || read_by_atoms(cell.target, m); });
}

}  // namespace

bool plain_runs(const Cell& c) {
  return c.tile_target_contiguous < 0 && !c.tile_target_rows_gathered && !c.tile_source_rows_gathered;
}

bool same_nest(const Cell& a, const Cell& b) {
  if (!plain_runs(a) || !plain_runs(b) || !same_modes(a, b)) return false;
  if (a.run != b.run || a.run_elements != b.run_elements || a.loops != b.loops || a.source_order_from != b.source_order_from ||
      a.target_order_loops != b.target_order_loops || a.cpu_order != b.cpu_order || a.cpu_loops != b.cpu_loops) return false;
  if (!same_side(a.source, b.source) || !same_side(a.target, b.target) || a.coords.size() != b.coords.size()) return false;
  for (std::size_t i = 0; i < a.coords.size(); ++i) {
    const CellCoordinate &x = a.coords[i], &y = b.coords[i];
    if (x.name != y.name || x.modes != y.modes || x.guarded != y.guarded || x.inverse != y.inverse) return false;
    if (x.lo == y.lo && x.hi == y.hi) continue;
    // A shifted range: the positions differ by a constant along this coordinate, which the sides' constants
    // already hold, so long as nothing else reads the coordinate's value.
    const int index = static_cast<int>(i);
    if (x.hi - x.lo != y.hi - y.lo || x.guarded || a.source.instance_coord == index || a.target.instance_coord == index || feeds_lookup(a, x))
      return false;
  }
  return true;
}

bool within_a_page(const SideForm& a, const SideForm& b, int element_bytes) {
  return a.tensor == b.tensor && a.instance_first == b.instance_first && std::abs(b.constant - a.constant) * element_bytes < kPageBytes;
}

std::int64_t source_span_elements(const Cell& cell) {
  std::int64_t span = cell.run_elements;
  for (auto m = cell.loops.rbegin(); m != cell.loops.rend(); ++m) {
    const auto at = static_cast<std::size_t>(*m);
    if (cell.source.stride[at] != span || read_by_atoms(cell.source, *m) || selects_instance_of(cell, cell.source, *m)) break;
    span *= cell.modes[at].extent;
  }
  return span;
}

bool source_spans_abut(const Cell& a, const Cell& b) {
  return a.source.tensor == b.source.tensor && a.source.instance_first == b.source.instance_first &&
         std::abs(b.source.constant - a.source.constant) == source_span_elements(a);
}

std::vector<std::vector<Sibling>> sibling_groups(const Plan& plan, int source_bytes, int target_bytes) {
  // Whether b's runs lie within a page of a's on one side, or b's spans abut a's there.
  auto near = [&](const Cell& a, const Cell& b) {
    return within_a_page(a.source, b.source, source_bytes) || within_a_page(a.target, b.target, target_bytes) ||
           source_spans_abut(a, b);
  };
  const std::size_t n = plan.cells.size();
  std::vector<bool> grouped(n, false);
  std::vector<std::vector<Sibling>> groups;
  for (std::size_t i = 0; i < n; ++i) {
    if (grouped[i]) continue;
    std::vector<int> members = {static_cast<int>(i)};
    grouped[i] = true;
    for (std::size_t j = i + 1; j < n; ++j) {
      if (grouped[j] || !same_nest(plan.cells[i], plan.cells[j]) || !near(plan.cells[i], plan.cells[j])) continue;
      if ((plan.cells[j].target.constant - plan.cells[i].target.constant) * target_bytes % 16 != 0) continue;
      members.push_back(static_cast<int>(j));
      grouped[j] = true;
    }
    std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
      return plan.cells[static_cast<std::size_t>(x)].source.constant < plan.cells[static_cast<std::size_t>(y)].source.constant;
    });
    const Cell& first = plan.cells[static_cast<std::size_t>(members[0])];
    std::vector<Sibling> group;
    for (int m : members) {
      const Cell& c = plan.cells[static_cast<std::size_t>(m)];
      group.push_back({m, c.source.constant - first.source.constant, c.target.constant - first.target.constant,
                       c.source.instance_first - first.source.instance_first, c.target.instance_first - first.target.instance_first});
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace kvlayout::emit

// Walking one cell of the emitter's move plan (cell_walk.hpp).
#include "check/cell_walk.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "spec/error.hpp"

namespace kvlayout::check::move_walk {
namespace {

void coords_in(const expr::Expr& e, std::set<int>& out) {
  if (e->op == expr::Op::Coord) out.insert(static_cast<int>(e->value));
  for (const auto& a : e->args) coords_in(a, out);
}

}  // namespace

CellWalk walk_of(const emit::Cell& cell, const expr::Expr& scope) {
  CellWalk w;
  w.cell = &cell;
  std::vector<bool> in_run(cell.modes.size(), false);
  for (int m : cell.run) in_run[static_cast<std::size_t>(m)] = true;
  for (int m : cell.loops) w.iterated.push_back(m);
  for (std::size_t m = 0; m < cell.modes.size(); ++m)
    if (!in_run[m] && std::find(w.iterated.begin(), w.iterated.end(), static_cast<int>(m)) == w.iterated.end())
      w.iterated.push_back(static_cast<int>(m));
  w.run_span.assign(cell.coords.size(), 0);
  for (int m : cell.run) {
    const emit::Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    w.run_extent.push_back(mode.extent);
    w.run_span[static_cast<std::size_t>(mode.coord)] += mode.weight * (mode.extent - 1);
  }
  for (std::size_t c = 0; c < cell.coords.size(); ++c)
    if (cell.coords[c].guarded) w.guarded.push_back(static_cast<int>(c));
  if (scope) {
    std::set<int> cs;
    coords_in(scope, cs);
    w.scope_coords.assign(cs.begin(), cs.end());
  }
  return w;
}

// A coordinate's value from its digits: lo + sum(weight * digit) (emit/plan.cpp's split_into_modes).
std::vector<std::int64_t> coords_of(const emit::Cell& cell, const std::vector<std::int64_t>& vals) {
  std::vector<std::int64_t> coord;
  coords_into(cell, vals, coord);
  return coord;
}

void coords_into(const emit::Cell& cell, const std::vector<std::int64_t>& vals, std::vector<std::int64_t>& coord) {
  coord.resize(cell.coords.size());
  for (std::size_t c = 0; c < cell.coords.size(); ++c) {
    const auto& cc = cell.coords[c];
    std::int64_t v = cc.lo;
    for (int m : cc.modes)
      v = expr::checked_add(v, expr::checked_mul(cell.modes[static_cast<std::size_t>(m)].weight, vals[static_cast<std::size_t>(m)]));
    coord[c] = v;
  }
}

SidePoint side_point(const emit::SideForm& f, const std::vector<std::int64_t>& vals, const std::vector<std::int64_t>& coord,
                     const layout::BoundLayout& b, const layout::BlockTables& tables) {
  SidePoint p;
  // The lookup captures one pointer, which std::function holds without allocating (three references did
  // not fit its small buffer: an allocation per call, two calls per loop iteration).
  struct Context {
    const layout::BoundLayout& b;
    const layout::BlockTables& tables;
    const std::vector<std::int64_t>& coord;
  } context{b, tables, coord};
  expr::Environment env{vals, [c = &context](int table, std::int64_t entry) -> std::int64_t {
                          const auto& t = c->b.tables[static_cast<std::size_t>(table)];
                          if (entry < 0 || entry >= t.length)
                            throw spec::SpecError(c->b.layout->file, "", t.name + "[" + std::to_string(entry) + "] at " +
                                                                             layout::format_coordinate(c->b, c->coord),
                                                  "a layout whose table reads stay inside the table (see prove's in-bounds)");
                          return c->tables.entry(static_cast<std::size_t>(table), entry);
                        }};
  // Checked like every offset (the wrap-around lesson): a walk past the cell (the slack of a partial block)
  // is not covered by bind's span checks. Overflow is reported, never wrapped.
  try {
    p.element = f.constant;
    for (std::size_t m = 0; m < f.stride.size(); ++m)
      p.element = expr::checked_add(p.element, expr::checked_mul(f.stride[m], vals[m]));
    for (const emit::Atom& a : f.atoms)
      p.element = expr::checked_add(p.element, expr::checked_mul(a.coef, expr::evaluate(a.e, env)));
  } catch (const expr::ArithmeticError& e) {
    throw spec::SpecError(b.layout->file, "", "an element offset that fails (" + std::string(e.what()) + ") at " +
                                                  layout::format_coordinate(b, coord),
                          "offsets that fit in 64 bits (see prove's defined and in-bounds)");
  }
  if (f.instance_coord >= 0) p.instance = coord[static_cast<std::size_t>(f.instance_coord)] - f.instance_coord_first;
  return p;
}

bool fits(const SidePoint& p, std::int64_t first, std::int64_t elements, const emit::SideForm& f, const layout::BoundLayout& b) {
  const auto& t = b.tensors[static_cast<std::size_t>(f.tensor)];
  if (first > 0 && p.element > std::numeric_limits<std::int64_t>::max() - first) return false;
  const std::int64_t e = p.element + first;
  return p.instance >= 0 && p.instance < t.instances && e >= 0 && e <= t.size - elements;
}

std::int64_t line_byte(const SidePoint& p, std::int64_t first, std::int64_t elements, const emit::SideForm& f,
                       const layout::BoundLayout& b, const StorageLine& line, const std::vector<std::int64_t>& coord) {
  const auto& t = b.tensors[static_cast<std::size_t>(f.tensor)];
  const std::int64_t e = first > 0 && p.element > std::numeric_limits<std::int64_t>::max() - first ? -1 : p.element + first;
  if (p.instance < 0 || p.instance >= t.instances || e < 0 || e > t.size - elements)
    throw spec::SpecError(b.layout->file, t.path, layout::format_coordinate(b, coord) + " placed outside " + t.name,
                          "a layout that places every held position inside its tensor (see prove's in-bounds)");
  return line.first[static_cast<std::size_t>(f.tensor)] + p.instance * line.instance_bytes[static_cast<std::size_t>(f.tensor)] +
         e * line.element_bytes;
}

}  // namespace kvlayout::check::move_walk

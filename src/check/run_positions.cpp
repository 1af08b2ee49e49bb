// Back from an expected run to the logical positions it moves: the digits of element e of a run are the
// loop iteration's (its ordinal, in odometer order) and the run's own modes (expected_move.hpp).
#include "check/cell_walk.hpp"
#include "check/expected_move.hpp"

namespace kvlayout::check {

using move_walk::coords_of;

std::vector<std::int64_t> position_at(const ExpectedMove& move, const layout::BoundLayout&, const ExpectedRun& run,
                                      std::int64_t element) {
  const emit::Cell& c = move.plan.cells[static_cast<std::size_t>(run.cell)];
  const std::vector<int>& it = move.iterated[static_cast<std::size_t>(run.cell)];
  std::vector<std::int64_t> vals(c.modes.size(), 0);
  std::int64_t e = run.first_element + element;
  std::int64_t o = run.ordinal + e / c.run_elements;  // a run merged over whole iterations (emit_piece)
  e %= c.run_elements;
  for (std::size_t k = it.size(); k-- > 0;) {
    const std::int64_t x = c.modes[static_cast<std::size_t>(it[k])].extent;
    vals[static_cast<std::size_t>(it[k])] = o % x;
    o /= x;
  }
  for (int m : c.run) {
    const std::int64_t x = c.modes[static_cast<std::size_t>(m)].extent;
    vals[static_cast<std::size_t>(m)] = e % x;
    e /= x;
  }
  return coords_of(c, vals);
}

std::int64_t coordinate_at(const ExpectedMove& move, const ExpectedRun& run, std::int64_t element, int coordinate) {
  const emit::Cell& c = move.plan.cells[static_cast<std::size_t>(run.cell)];
  const std::vector<int>& it = move.iterated[static_cast<std::size_t>(run.cell)];
  const emit::CellCoordinate& cc = c.coords[static_cast<std::size_t>(coordinate)];
  std::int64_t value = cc.lo;
  std::int64_t e = run.first_element + element;
  std::int64_t o = run.ordinal + e / c.run_elements;
  e %= c.run_elements;
  for (std::size_t k = it.size(); k-- > 0;) {
    const emit::Mode& m = c.modes[static_cast<std::size_t>(it[k])];
    if (m.coord == coordinate) value += m.weight * (o % m.extent);
    o /= m.extent;
  }
  for (int r : c.run) {
    const emit::Mode& m = c.modes[static_cast<std::size_t>(r)];
    if (m.coord == coordinate) value += m.weight * (e % m.extent);
    e /= m.extent;
  }
  return value;
}

}  // namespace kvlayout::check

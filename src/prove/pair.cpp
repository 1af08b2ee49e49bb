#include "prove/pair.hpp"

#include <algorithm>

#include "layout/content_match.hpp"

namespace kvlayout::prove {
namespace {

bool has_table(const layout::BoundLayout& b, const std::string& name) {
  return std::any_of(b.tables.begin(), b.tables.end(), [&](const auto& t) { return t.name == name; });
}

void record_reads(PositionWitness& w, const Pair& pair, Side side, const layout::Location& loc) {
  const auto& b = pair.side(side);
  const auto& o = side == Side::Source ? pair.target : pair.source;
  for (const auto& r : loc.reads) {
    const std::string& name = b.tables[static_cast<std::size_t>(r.table)].name;
    std::string key = has_table(o, name) ? side_name(side) + "." + name : name;
    w.tables[key][r.entry] = r.value;
  }
}

}  // namespace

bool Pair::same_content() const { return !layout::content_mismatch(source, target); }

const layout::BoundLayout* Pair::other(Side s) const {
  const layout::BoundLayout& o = s == Side::Source ? target : source;
  if (!o.fits() || !same_content()) return nullptr;
  return &o;
}

PositionWitness make_witness(const Pair& pair, Side side, const std::vector<std::int64_t>& coord,
                             const layout::BlockTables& tables) {
  PositionWitness w;
  w.coord = coord;
  w.side_tables = tables;
  // An expression failing at coord (division by zero, overflow) propagates as the evaluator's SpecError,
  // naming its JSON path and the coordinate: check_defined() runs before any obligation, so this is
  // reached only where a failure hides behind a table read outside its table, which the evaluator meets
  // first. It is bad input either way, never a witness of a grade.
  layout::Location here = layout::locate(pair.side(side), coord, tables);
  record_reads(w, pair, side, here);
  std::optional<layout::Location> there;
  Side other_side = side == Side::Source ? Side::Target : Side::Source;
  if (const layout::BoundLayout* o = pair.other(side)) {
    there = layout::locate(*o, coord, layout::identity_tables(*o));
    record_reads(w, pair, other_side, *there);
  }
  if (side == Side::Source) {
    w.source = here;
    w.target = there;
  } else {
    w.target = here;
    w.source = there;
  }
  return w;
}

PositionWitness make_witness(const Pair& pair, const std::vector<std::int64_t>& coord) {
  return make_witness(pair, Side::Source, coord, layout::identity_tables(pair.source));
}

}  // namespace kvlayout::prove

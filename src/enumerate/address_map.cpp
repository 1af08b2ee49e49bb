#include "enumerate/address_map.hpp"

#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/view_algebra.hpp"

namespace kvlayout::enumerate {

std::int64_t box_size(const layout::BoundLayout& bound) { return layout::box_volume(bound.coord_extents); }

std::vector<std::int64_t> coordinate_of(const layout::BoundLayout& bound, std::int64_t position) {
  std::vector<std::int64_t> coord(bound.coord_extents.size());
  for (std::size_t i = coord.size(); i-- > 0;) {
    coord[i] = position % bound.coord_extents[i];
    position /= bound.coord_extents[i];
  }
  return coord;
}

AddressMap map_addresses(const layout::BoundLayout& bound, const layout::BlockTables& tables) {
  AddressMap map;
  for (const auto& t : bound.tensors) {
    map.tensor_base.push_back(map.storage);
    map.storage = expr::checked_add(map.storage, expr::checked_mul(t.instances, t.size));
  }
  const std::int64_t n = box_size(bound);
  map.element.resize(static_cast<std::size_t>(n));
  // The concrete evaluator, driven by an odometer over the coordinate box (last coordinate fastest).
  std::vector<std::int64_t> coord(bound.coord_extents.size(), 0);
  for (std::int64_t p = 0; p < n; ++p) {
    layout::Location loc = layout::locate(bound, coord, tables);
    std::int64_t& slot = map.element[static_cast<std::size_t>(p)];
    if (loc.placement == layout::Placement::NotHeld) {
      slot = kNotHeld;
    } else if (loc.placement == layout::Placement::OutOfBounds) {
      slot = kOutOfBounds;
      if (map.out_of_bounds++ == 0) map.first_out_of_bounds = p;
    } else {
      const auto& t = bound.tensors[static_cast<std::size_t>(loc.address.tensor)];
      slot = map.tensor_base[static_cast<std::size_t>(loc.address.tensor)] + loc.address.instance * t.size + loc.address.offset;
    }
    for (std::size_t i = coord.size(); i-- > 0;) {
      if (++coord[i] < bound.coord_extents[i]) break;
      coord[i] = 0;
    }
  }
  return map;
}

std::vector<layout::BlockTables> table_choices(const layout::BoundLayout& bound) {
  return {layout::identity_tables(bound), layout::reversed_tables(bound), layout::random_tables(bound, 20261129)};
}

std::string table_choice_name(std::size_t i) {
  static const char* names[] = {"identity", "reversed", "random"};
  return i < 3 ? names[i] : "tables #" + std::to_string(i);
}

}  // namespace kvlayout::enumerate

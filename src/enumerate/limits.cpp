#include "enumerate/limits.hpp"

#include "expr/arithmetic.hpp"
#include "layout/view_algebra.hpp"

namespace kvlayout::enumerate {

std::int64_t storage_bytes(const layout::BoundLayout& bound) {
  std::int64_t bytes = 0;
  for (const auto& t : bound.tensors) bytes = expr::checked_add(bytes, layout::tensor_bytes(t, bound.element_bytes()));
  return bytes;
}

std::optional<std::string> too_large(const layout::BoundLayout& bound) {
  const std::string on = bound.layout->name + " on " + bound.cache.name;
  const std::int64_t positions = layout::box_volume(bound.coord_extents);
  if (positions > kEnumerationLimit)
    return on + " has " + std::to_string(positions) + " positions, over the enumeration limit of " +
           std::to_string(kEnumerationLimit);
  const std::int64_t bytes = storage_bytes(bound);
  if (bytes > kStorageLimit)
    return on + " allocates " + std::to_string(bytes) + " bytes of storage, over the enumeration limit of " +
           std::to_string(kStorageLimit);
  return std::nullopt;
}

}  // namespace kvlayout::enumerate

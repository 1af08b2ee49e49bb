#include "enumerate/limits.hpp"

#include "enumerate/address_map.hpp"
#include "expr/arithmetic.hpp"

namespace kvlayout::enumerate {

std::optional<std::int64_t> storage_bytes(const layout::BoundLayout& bound) {
  try {
    std::int64_t bytes = 0;
    for (const auto& t : bound.tensors)
      bytes = expr::checked_add(bytes, expr::checked_mul(t.instances, expr::checked_mul(t.size, bound.element_bytes())));
    return bytes;
  } catch (const expr::ArithmeticError&) {
    return std::nullopt;
  }
}

std::optional<std::string> too_large(const layout::BoundLayout& bound) {
  const std::string on = bound.layout->name + " on " + bound.cache.name;
  const std::int64_t positions = box_size(bound);  // bind checked that the box fits in int64
  if (positions > kEnumerationLimit)
    return on + " has " + std::to_string(positions) + " positions, over the enumeration limit of " +
           std::to_string(kEnumerationLimit);
  const std::optional<std::int64_t> bytes = storage_bytes(bound);
  if (!bytes || *bytes > kStorageLimit)
    return on + " allocates " + (bytes ? std::to_string(*bytes) : std::string("more than 2^63")) +
           " bytes of storage, over the enumeration limit of " + std::to_string(kStorageLimit);
  return std::nullopt;
}

}  // namespace kvlayout::enumerate

#pragma once
// How large a layout may be on a shape and still be enumerated. Everything the cross-check keeps is
// proportional to one of two sizes: the positions (each located under three table choices and kept), and
// the storage (every tensor instance allocated as real bytes, three times, plus an owner per element for
// the collision bitmap). A valid layout can be huge on a small cache (an explicit stride of 2^40), so both
// are limited. Positions depend on the shape alone (the content's box on it), so a shape over that limit
// is refused as bad input; storage depends on the layout, so a layout over that limit is reported as not
// enumerable, never allocated. A shape derived for a pair must be within both.
#include <cstdint>
#include <optional>
#include <string>

#include "layout/bound_layout.hpp"

namespace kvlayout::enumerate {

// The most positions one layout may have on the cross-check shape (the shipped `small` has at most 42624).
inline constexpr std::int64_t kEnumerationLimit = std::int64_t{1} << 21;
// The most storage bytes one layout may allocate there: every tensor instance, `size * element bytes`
// (the shipped layouts need at most a few hundred KiB on `small`).
inline constexpr std::int64_t kStorageLimit = std::int64_t{1} << 26;

// Storage bytes of all tensor instances (layout::tensor_bytes summed).
// @pre bound.fits() (bind has checked that the sum fits in int64)
std::int64_t storage_bytes(const layout::BoundLayout& bound);

// Why `bound` is too large to enumerate (which limit, by how much), or nullopt when it is within both.
// @pre bound.fits()
std::optional<std::string> too_large(const layout::BoundLayout& bound);

}  // namespace kvlayout::enumerate

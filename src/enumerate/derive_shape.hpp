#pragma once
// The shape a pair is cross-checked on. Enumeration needs a small shape, but a layout may require what
// the small one lacks (head_size 128, say). Then a shape is derived for the pair from the small one:
// only the cache-shape parameters that a failed requirement reads — directly or through the layout's
// own parameters — (and any the small shape does not bind) are varied, over a few candidate values in
// a fixed order: the proof shape's value (the production head_size 128), the small shape's, then
// 1, 2, 4, ... 4096. The first combination (first parameter slowest) on which both layouts fit and are
// within the enumeration limits is the shape. Deterministic, and what the failed requirements do not
// read stays small (few tokens, few layers).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::enumerate {

// The most combinations of candidate values tried for one pair.
inline constexpr std::size_t kDerivationTries = 1024;

struct ShapeChoice {
  std::optional<spec::CacheShape> shape;  // `small` itself, or a shape derived from it; empty: none found
  std::string why_not;                    // when empty: which side does not fit, and what was tried
};

// The candidate values of one varied parameter, in the order they are tried (duplicates dropped).
std::vector<std::int64_t> candidate_values(const std::string& param, const spec::CacheShape& small,
                                           const spec::CacheShape& proof);

// "small[head_size=128]": the small shape's name and the parameters that differ from it.
std::string derived_name(const spec::CacheShape& small, const spec::CacheShape& derived);

// @post shape is `small` when both layouts fit it (whether or not they are within the enumeration limits
// there; enumerate_layout says so), else a derived shape on which both fit and are within the limits,
// else empty with why_not set.
// Throws SpecError for a declaration that cannot be bound on `small` (layout::bind).
ShapeChoice cross_check_shape(const std::shared_ptr<const spec::Layout>& source,
                              const std::shared_ptr<const spec::Layout>& target, const spec::CacheShape& small,
                              const spec::CacheShape& proof);

}  // namespace kvlayout::enumerate

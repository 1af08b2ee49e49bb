#pragma once
// Do two declarations describe the same layout on a cache shape? Same content, element type and scale;
// tables of the same lengths and ranges (paired in declaration order); tensors with the same instances
// and allocation sizes; and, under one arbitrary block table, every position held by one is held by the
// other, in the same tensor, instance and element. Decided symbolically (the normaliser settles
// syntactically identical views; the rest goes to Z3). Used to group duplicate declarations (e.g.
// vllm-flashinfer-nhd and flashinfer-nhd) and to tell mutants from their originals.
#include <optional>
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"
#include "verdict/obligation.hpp"
#include "prove/options.hpp"

namespace kvlayout::prove {

struct Equivalence {
  Status status = Status::Unknown;  // proved: the same address function; refuted: they differ
  std::string detail;
  std::optional<std::vector<std::int64_t>> witness;  // a position the two place differently, when found
};

// Whether the same bits mean the same number in both: empty when the element types and quantisation scales
// agree, else what differs ("element types bf16 and fp8_e4m3", "different quantisation scales"). Shared by
// same_address_function and the refinement check (check/refinement.cpp).
std::string value_difference(const spec::Layout& a, const spec::Layout& b);

// @pre both fit the cache shape.
Equivalence same_address_function(const layout::BoundLayout& a, const layout::BoundLayout& b,
                                  const ProveOptions& options = {});

}  // namespace kvlayout::prove

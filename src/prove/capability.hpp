#pragma once
// What would unblock a non-exact grade: gather the other tensor-parallel ranks (which, with which heads),
// decompress the MLA latent with the model's weights, keep the quantisation scales, fix a declaration.
#include <string>

#include "layout/bound_layout.hpp"
#include "prove/proof.hpp"

namespace kvlayout::prove {

// @pre proof.grade is not exact. `overrides` as the proof was bound with.
std::string capability(const Proof& proof, const layout::BoundLayout& source, const layout::BoundLayout& target,
                       const layout::Overrides& overrides);

}  // namespace kvlayout::prove

#pragma once
// The byte oracle's move: what any correct relayout must leave in the destination.
#include <cstdint>

#include "enumerate/cross_check.hpp"
#include "enumerate/storage.hpp"

namespace kvlayout::enumerate {

// dst[T(x)] = convert(src[S(x)]) for every position x held by both sides (under table choice k) whose
// token is below num_tokens (all positions when the content has no token); nothing else in dst changes.
// @post returns the number of positions moved.
std::int64_t reference_move(const Enumerated& source, const Enumerated& target, std::size_t k, std::int64_t num_tokens,
                            const Storage& src, Storage& dst);

}  // namespace kvlayout::enumerate

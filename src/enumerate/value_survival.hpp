#pragma once
// What the oracles (pair and group) need to judge values: whether every value of one element type
// survives a round trip through another, and the quantisation scale each position carries. One home, so
// the pair and group oracles judge values by one rule.
#include <vector>

#include "enumerate/cross_check.hpp"
#include "spec/dtype.hpp"

namespace kvlayout::enumerate {

// Equal, or both NaN.
bool same_value(double a, double b);
// Every value of `from` (a spread of 2^16 for fp32) through from -> to -> from returns; NaN payloads aside.
// Memoised per pair of types; thread-safe.
bool sweep_exact(spec::DType from, spec::DType to);
// The scale of each position of e's box (1 without a scale): mixed radix over the scale's coordinates.
std::vector<double> position_scales(const Enumerated& e);

}  // namespace kvlayout::enumerate

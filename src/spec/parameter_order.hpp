#pragma once
// Layout parameters may be defined in terms of each other ("num_blocks": "ceil_div(num_tokens, block_size)");
// they are evaluated in dependency order, and a cycle is a declaration error.
#include <string>
#include <vector>

#include "spec/layout.hpp"

namespace kvlayout::spec {

// @post a permutation of indices into params such that each parameter comes after those it uses;
// throws SpecError naming the cycle ("a -> b -> a") and the path of its first member otherwise.
std::vector<std::size_t> parameter_order(const std::vector<Parameter>& params, const std::string& file);

}  // namespace kvlayout::spec

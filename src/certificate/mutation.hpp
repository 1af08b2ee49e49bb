#pragma once
// Systematic single edits of a declaration, the kinds of mistake that shipped in real connectors: two index
// expressions swapped, an extent off by one, a stride or stride order changed, a `% x` or `/ x` dropped,
// an index shifted by one, a domain bound moved, the element type changed.
#include <memory>
#include <string>
#include <vector>

#include "spec/layout.hpp"

namespace kvlayout::certificate {

struct Mutant {
  std::string kind;         // swap-index, extent+1, extent-1, stride, drop-mod, drop-div, shift-index,
                            // domain-bound, dtype
  std::string description;  // what was edited, in the declaration's own words
  std::shared_ptr<const spec::Layout> layout;
};

const std::vector<std::string>& mutation_kinds();

// Every single edit of the listed kinds that applies to `original` (a mutant may fail to bind).
std::vector<Mutant> mutants(const spec::Layout& original);

}  // namespace kvlayout::certificate

#pragma once
// The CPU kernel's plan (tables inverted) of a pair of shipped engine layouts on a shipped cache shape,
// for the plan-stage tests, and where a cell's loops run.
#include <string>

#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

namespace kvlayout::test {

inline emit::Plan cpu_plan(const std::string& source, const std::string& target, const std::string& cache = "llama-3.1-8b") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto c = spec::load_cache(catalog.find_cache(cache).string());
  return emit::make_plan(layout::bind(spec::load_layout(catalog.find_layout(source).string()), c),
                         layout::bind(spec::load_layout(catalog.find_layout(target).string()), c), emit::kCpuPlanOptions);
}

// The level (0 outermost) of the loop over the mode named `var`, or -1 where no loop runs over it.
inline int level_of(const emit::Cell& c, const std::string& var) {
  for (std::size_t l = 0; l < c.loops.size(); ++l)
    if (c.modes[static_cast<std::size_t>(c.loops[l])].var == var) return static_cast<int>(l);
  return -1;
}

}  // namespace kvlayout::test

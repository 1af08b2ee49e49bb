#pragma once
// The CPU kernel's plan (tables inverted) of a pair of shipped engine layouts on a shipped cache shape,
// for the plan-stage tests.
#include <string>

#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"
#include "spec/catalog.hpp"

namespace kvlayout::test {

inline emit::Plan cpu_plan(const std::string& source, const std::string& target, const std::string& cache = "llama-3.1-8b") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto c = spec::load_cache(catalog.find_cache(cache).string());
  return emit::make_plan(layout::bind(spec::load_layout(catalog.find_layout(source).string()), c),
                         layout::bind(spec::load_layout(catalog.find_layout(target).string()), c), emit::PlanOptions{.invert_tables = true});
}

}  // namespace kvlayout::test

#pragma once
// What several commands read the same way: --specs, a layout and a cache shape by name or path, --param.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/arguments.hpp"
#include "layout/bound_layout.hpp"
#include "layout/rank_group.hpp"
#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"
#include "spec/layout.hpp"

namespace kvlayout::cli {

spec::Catalog catalog_from(const Arguments& args);
std::shared_ptr<const spec::Layout> layout_from(const spec::Catalog& catalog, const std::string& name_or_path);
spec::CacheShape cache_from(const spec::Catalog& catalog, const Arguments& args);  // --cache, required
layout::Overrides overrides_from(const Arguments& args);                          // --param NAME=VALUE ...
// SRC DST (the two positional arguments, already counted by the caller) and --cache, as every pair
// command reads them.
struct LayoutPair {
  std::shared_ptr<const spec::Layout> source, target;
  spec::CacheShape cache;
};
LayoutPair pair_from(const spec::Catalog& catalog, const Arguments& args);
// @post fits: a layout that does not fit the cache shape is bad input for a command with nothing to grade.
layout::BoundLayout bind_fitting(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& cache,
                                 const layout::Overrides& overrides);
// --source-param / --target-param NAME=VALUE ...: one side's layout parameters (e.g. tp_size=1).
std::map<std::string, std::int64_t> side_params_from(const Arguments& args, const std::string& flag);
// The pair as two groups when either side is a rank family (layout/rank_group.hpp), else nullopt; with
// no family, --source-param / --target-param bind the plain layouts' parameters in `pair` instead.
struct GroupPair {
  layout::Group source, target;
};
std::optional<GroupPair> groups_from(LayoutPair& pair, const Arguments& args);
// --limit-ms N: a positive number of milliseconds (else SpecError), or `fallback` when absent.
std::int64_t limit_ms_from(const Arguments& args, std::int64_t fallback);

}  // namespace kvlayout::cli

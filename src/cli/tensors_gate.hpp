#pragma once
// `--tensors DUMP` / `--target-tensors DUMP` on prove and emit: before anything is proved or emitted, the
// SOURCE (or TARGET) declaration, bound to the cache shape, must describe the tensors of the dump. A
// proof about a declaration that is not the real tensors proves nothing about them.
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "layout/bound_layout.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::cli {

// Checks each side whose flag is given (`flag` names it in messages). Prints the geometry verdict (text, or
// check::to_json under `json`) of the first side that mismatches and returns its exit code (1); returns
// nullopt when every given dump matches (nothing printed) or no flag is given. Throws SpecError for a bad dump.
std::optional<int> gate_tensors(const Arguments& args, const std::shared_ptr<const spec::Layout>& source,
                                const std::shared_ptr<const spec::Layout>& target, const spec::CacheShape& cache,
                                const layout::Overrides& overrides, bool json);

}  // namespace kvlayout::cli

#pragma once
// Binding helpers for layout tests: a declaration written inline, bound to an inline or shipped cache shape.
#include <string>

#include "layout/bound_layout.hpp"
#include "spec/json_node.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout::test {

// FlashAttention NHD on `small`, the base each test edits.
spec::Json flash_nhd_declaration();
spec::CacheShape small_cache();
// Writes `declaration` as case.json under `dir`, loads and binds it.
layout::BoundLayout bind_inline(const TempDir& dir, const spec::Json& declaration, const spec::CacheShape& cache,
                                const layout::Overrides& overrides = {});
// A shipped layout bound to a shipped cache shape, both by name.
layout::BoundLayout bind_named(const std::string& layout, const std::string& cache,
                               const layout::Overrides& overrides = {});

}  // namespace kvlayout::test

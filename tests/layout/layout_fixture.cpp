#include "layout/layout_fixture.hpp"

#include "spec/catalog.hpp"

namespace kvlayout::test {

spec::Json flash_nhd_declaration() {
  return spec::Json::parse(R"J({
    "name": "case", "engine": "test", "control": true, "content": "kv-heads", "dtype": "bf16",
    "params": {"block_size": 16, "num_blocks": "ceil_div(num_tokens, block_size)"},
    "tables": {"block_table": {"length": "num_blocks", "range": "num_blocks"}},
    "tensors": [{
      "name": "kv_cache", "per": "layer",
      "shape": [2, "num_blocks", "block_size", "num_kv_heads", "head_size"],
      "index": ["kv", "block_table[token / block_size]", "token % block_size", "head", "dim"]
    }]
  })J");
}

spec::CacheShape small_cache() {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache("small").string());
}

layout::BoundLayout bind_inline(const TempDir& dir, const spec::Json& declaration, const spec::CacheShape& cache,
                                const layout::Overrides& overrides) {
  auto decl = spec::load_layout(dir.write("case.json", declaration.dump(2)));
  return layout::bind(decl, cache, overrides);
}

layout::BoundLayout bind_named(const std::string& layout, const std::string& cache,
                               const layout::Overrides& overrides) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return layout::bind(spec::load_layout(catalog.find_layout(layout).string()),
                      spec::load_cache(catalog.find_cache(cache).string()), overrides);
}

}  // namespace kvlayout::test

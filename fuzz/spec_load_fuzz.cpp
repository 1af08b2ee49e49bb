// libFuzzer harness: the spec loaders on arbitrary bytes, as a layout declaration (spec::load_layout) and as
// a cache shape (spec::load_cache). Both read files, so the input is written to a per-process temp file.
//
// A SpecError (exit 2 at the CLI) is the normal answer to bad input; anything else aborts (fuzz_support.hpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvlayout;
  const std::string file = fuzz::write_input(data, size);
  fuzz::run_stage("load_layout", [&] {
    auto layout = spec::load_layout(file);
    // Citation formatting is the one thing `list` does with a loaded layout beyond its fields.
    if (layout->cite) spec::format_citation(*layout->cite);
  });
  fuzz::run_stage("load_cache", [&] { spec::load_cache(file); });
  fuzz::remove_input(file);
  return 0;
}

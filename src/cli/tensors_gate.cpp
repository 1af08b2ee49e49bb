#include "cli/tensors_gate.hpp"

#include <iostream>

#include "check/geometry.hpp"
#include "check/result.hpp"
#include "cli/exit_code.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::cli {

namespace {

// nullopt when the side matches (or cannot be bound, in which case the command itself refuses it).
std::optional<int> gate_one(const std::string& file, const std::shared_ptr<const spec::Layout>& layout,
                            const spec::CacheShape& cache, const layout::Overrides& overrides, bool json,
                            const std::string& side) {
  check::TensorDump dump = check::load_tensor_dump(file);
  layout::BoundLayout bound = layout::bind(layout, cache, overrides);
  if (!bound.fits()) {
    std::cerr << "kvlayout: " << side << " " << layout->name << " does not fit " << cache.name
              << "; its geometry is not checked against " << file << "\n";
    return std::nullopt;
  }
  check::CheckResult result = check::check_geometry(bound, dump);
  if (result.verdict == check::Verdict::Ok) {
    // On stderr: standard output stays the proof (or the kernel) alone.
    std::cerr << "kvlayout: " << side << " geometry OK: " << result.message << "\n";
    return std::nullopt;
  }
  if (json) std::cout << check::to_json(result).dump(2) << "\n";
  else std::cout << check::format_text(result, layout->name + " (" + side + ") against " + file + " on " + cache.name);
  return check::exit_code(result.verdict);
}

}  // namespace

std::optional<int> gate_tensors(const Arguments& args, const std::shared_ptr<const spec::Layout>& source,
                                const std::shared_ptr<const spec::Layout>& target, const spec::CacheShape& cache,
                                const layout::Overrides& overrides, bool json) {
  if (auto file = args.value("tensors"))
    if (auto code = gate_one(*file, source, cache, overrides, json, "SRC")) return code;
  if (auto file = args.value("target-tensors"))
    if (auto code = gate_one(*file, target, cache, overrides, json, "DST")) return code;
  return std::nullopt;
}

}  // namespace kvlayout::cli

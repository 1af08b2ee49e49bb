// libFuzzer harness: a fuzzed layout declaration proven on the `small` cache shape — against itself, and
// in both directions against vllm-flash-nhd — under a short solver limit; then bound and evaluated at a
// few coordinates by the concrete evaluator (what `addr` does).
//
// A SpecError (exit 2) is a normal answer; any other exception aborts (fuzz_support.hpp). One cross-check
// aborts too, because a false EXACT is the worst answer kvlayout can give: when any of the three proofs is
// EXACT, both its sides were proven well-formed and in bounds over the whole index space and every
// injective block table; so every sampled coordinate the fuzzed layout holds must evaluate, in bounds,
// under identity and reversed tables.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"
#include "prove/proof.hpp"
#include "prove/report.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

#ifndef KVLAYOUT_FUZZ_SPECS_DIR
#error "KVLAYOUT_FUZZ_SPECS_DIR must name the source tree's specs/ (set by fuzz/CMakeLists.txt)"
#endif

namespace {

using namespace kvlayout;

// Short enough that three proofs of a pathological input stay well inside libFuzzer's -timeout=10;
// a limit reached is UNKNOWN, which is a normal answer here.
constexpr std::int64_t kLimitMs = 100;

struct Fixed {
  spec::CacheShape small;
  std::shared_ptr<const spec::Layout> reference;
};

const Fixed& fixed() {
  static const Fixed f{spec::load_cache(KVLAYOUT_FUZZ_SPECS_DIR "/caches/small.json"),
                       spec::load_layout(KVLAYOUT_FUZZ_SPECS_DIR "/engines/vllm-flash-nhd.json")};
  return f;
}

// Both corners, then points drawn from the input's hash, half of their values among 0, 1 and 2 (where a
// divisor such as `head - 1` vanishes): cheap next to a proof, and different per input.
std::vector<std::vector<std::int64_t>> sample_coordinates(const layout::BoundLayout& bound, std::uint64_t seed) {
  constexpr int kSamples = 32;
  std::vector<std::vector<std::int64_t>> out;
  const auto& ext = bound.coord_extents;
  for (std::int64_t e : ext)
    if (e <= 0) return out;  // nothing to sample (bind should have refused it)
  for (int k = 0; k < kSamples; ++k) {
    std::vector<std::int64_t> c(ext.size());
    for (std::size_t i = 0; i < ext.size(); ++i) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      const std::uint64_t r = seed >> 16;
      const std::uint64_t range = static_cast<std::uint64_t>(r & 1 ? std::min<std::int64_t>(ext[i], 3) : ext[i]);
      c[i] = k == 0 ? 0 : k == 1 ? ext[i] - 1 : static_cast<std::int64_t>((r >> 1) % range);
    }
    out.push_back(std::move(c));
  }
  return out;
}

// `exact`: the name of an EXACT proof the layout took part in, or empty.
void evaluate_addresses(const std::shared_ptr<const spec::Layout>& decl, const std::string& exact, std::uint64_t seed) {
  const layout::BoundLayout bound = layout::bind(decl, fixed().small);
  if (!bound.fits()) return;
  for (const layout::BlockTables& tables : {layout::identity_tables(bound), layout::reversed_tables(bound)}) {
    for (const auto& coord : sample_coordinates(bound, seed)) {
      layout::Location loc;
      const bool evaluated = fuzz::run_stage("locate", [&] { loc = layout::locate(bound, coord, tables); });
      if (!exact.empty() && !evaluated)
        fuzz::fail("false EXACT", exact + " is EXACT on small, but " + decl->name + " does not evaluate at " +
                                      layout::format_coordinate(bound, coord) + " (exit 2)");
      if (!evaluated || loc.placement == layout::Placement::NotHeld) continue;
      if (loc.placement == layout::Placement::OutOfBounds) {
        if (!exact.empty())
          fuzz::fail("false EXACT", exact + " is EXACT on small, but " + decl->name + " places " +
                                        layout::format_coordinate(bound, coord) + " out of bounds: " + loc.violation);
        continue;
      }
      fuzz::run_stage("byte_offset", [&] { layout::byte_offset(bound, loc.address); });
    }
  }
}

// Proves source -> target, prints the report both ways (as `prove` and `prove --json` do) and records the
// pair in `exact` if it is the first EXACT one.
void prove_and_report(const std::shared_ptr<const spec::Layout>& source,
                      const std::shared_ptr<const spec::Layout>& target, const prove::ProveOptions& options,
                      std::string& exact) {
  prove::Proof proof = prove::prove(source, target, fixed().small, options);
  prove::format_text(proof);
  prove::to_json(proof).dump(2);
  if (exact.empty() && prove::is_exact(proof.grade)) exact = source->name + " -> " + target->name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Fixed& f = fixed();
  const std::string file = fuzz::write_input(data, size);
  std::shared_ptr<const spec::Layout> decl;
  if (fuzz::run_stage("load_layout", [&] { decl = spec::load_layout(file); })) {
    prove::ProveOptions options;
    options.limit_ms = kLimitMs;
    options.memory_mb = 256;
    std::string exact;
    fuzz::run_stage("prove self", [&] { prove_and_report(decl, decl, options, exact); });
    fuzz::run_stage("prove to reference", [&] { prove_and_report(decl, f.reference, options, exact); });
    fuzz::run_stage("prove from reference", [&] { prove_and_report(f.reference, decl, options, exact); });
    std::uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the input
    for (std::size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 1099511628211ULL;
    fuzz::run_stage("bind", [&] { evaluate_addresses(decl, exact, seed); });
  }
  fuzz::remove_input(file);
  return 0;
}

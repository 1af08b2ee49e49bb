// libFuzzer harness: the user inputs of `kvlayout check` and `kvlayout plan check` (src/check/), chosen by
// the first input byte modulo 3 (the seeds use '0', '1', '2'); the rest of the input is the input proper:
//   0  a tensor dump (`check --tensors`): check::load_tensor_dump, then check::check_geometry of
//      vllm-flash-nhd on `small`
//   1  a plan JSON (`plan check --plan`): read as the CLI reads it, then check::check_plan from
//      vllm-flash-nhd to vllm-flashinfer-nhd on `small` (every form: descriptors, runs, transfers, slots,
//      families)
//   2  `--assumed-offset` text, one flag per line: the offset formula, then optionally --assumed-holds,
//      --scope, --assumed-instance and --assumed-tensor (an empty line leaves that flag out);
//      check::assumed_from_offset of flashinfer-nhd on `small`, then check::check_refinement against it
// Every verdict is printed as text and JSON, as the CLI does. A SpecError (exit 2) is the normal answer to
// bad input, and so is any verdict; any other exception is the CLI's exit 4 and aborts (fuzz_support.hpp).
//
// Byte mutations of a JSON document mostly break its syntax, so for the two JSON inputs half the mutations
// are structural (LLVMFuzzerCustomMutator below, json_mutator.hpp).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/assumed_offset.hpp"
#include "check/geometry.hpp"
#include "check/plan_check.hpp"
#include "check/refinement.hpp"
#include "check/result.hpp"
#include "fuzz_support.hpp"
#include "json_mutator.hpp"
#include "layout/bound_layout.hpp"
#include "spec/cache_shape.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"

#ifndef KVLAYOUT_FUZZ_SPECS_DIR
#error "KVLAYOUT_FUZZ_SPECS_DIR must name the source tree's specs/ (set by fuzz/CMakeLists.txt)"
#endif

namespace {

using namespace kvlayout;

// Per solver query (families, refinement steps, explaining a counterexample byte): a few queries per input
// stay well inside libFuzzer's -timeout=10; a limit reached is UNKNOWN, a normal answer.
constexpr std::int64_t kLimitMs = 200;
// Larger inputs are skipped: the seeds are a few KiB, and a long input only slows the run down.
constexpr std::size_t kMaxInput = 64 * 1024;

struct Fixed {
  spec::CacheShape small;
  layout::BoundLayout flash;       // vllm-flash-nhd: the geometry declaration and the plan's source
  layout::BoundLayout flashinfer;  // vllm-flashinfer-nhd: the plan's target
  layout::BoundLayout real;        // flashinfer-nhd: REAL for --assumed-offset
};

layout::BoundLayout bind_engine(const char* name, const spec::CacheShape& cache) {
  layout::BoundLayout b = layout::bind(spec::load_layout(std::string(KVLAYOUT_FUZZ_SPECS_DIR "/engines/") + name + ".json"), cache);
  if (!b.fits()) kvlayout::fuzz::fail("setup", std::string(name) + " does not fit small");
  return b;
}

const Fixed& fixed() {
  static const Fixed f = [] {
    spec::CacheShape small = spec::load_cache(KVLAYOUT_FUZZ_SPECS_DIR "/caches/small.json");
    return Fixed{small, bind_engine("vllm-flash-nhd", small), bind_engine("vllm-flashinfer-nhd", small),
                 bind_engine("flashinfer-nhd", small)};
  }();
  return f;
}

prove::ProveOptions options() {
  prove::ProveOptions o;
  o.limit_ms = kLimitMs;
  o.memory_mb = 256;
  return o;
}

// KVLAYOUT_FUZZ_VERBOSE=1 prints each answer to stderr: to see what a seed or a replayed input reaches.
bool verbose() {
  static const bool v = std::getenv("KVLAYOUT_FUZZ_VERBOSE") != nullptr;
  return v;
}

// What the CLI does with every verdict: print it as text and as JSON.
void report(const check::CheckResult& r) {
  const std::string text = check::format_text(r, "fuzz");
  check::to_json(r).dump(2);
  if (verbose()) std::fprintf(stderr, "%s", text.c_str());
}

// fuzz::run_stage, with the SpecError printed when verbose.
template <class F>
void stage(const char* name, F&& f) {
  fuzz::run_stage(name, [&] {
    try {
      f();
    } catch (const spec::SpecError& e) {
      if (verbose()) std::fprintf(stderr, "%s: SpecError: %s\n", name, e.what());
      throw;
    }
  });
}

void geometry(const std::uint8_t* data, std::size_t size) {
  const std::string file = fuzz::write_input(data, size);
  stage("geometry", [&] { report(check::check_geometry(fixed().flash, check::load_tensor_dump(file))); });
  fuzz::remove_input(file);
}

void plan(const std::uint8_t* data, std::size_t size) {
  // Read as the CLI reads it: spec::read_plain_json_file (depth limit, number overflow as bad input).
  const std::string file = fuzz::write_input(data, size);
  nlohmann::json p;
  bool read = false;
  stage("read plan", [&] {
    p = spec::read_plain_json_file(file);
    read = true;
  });
  fuzz::remove_input(file);
  if (!read) return;
  stage("check_plan", [&] { report(check::check_plan(fixed().flash, fixed().flashinfer, p, "plan.json", options())); });
}

// The input's lines; a missing or empty line is a flag left out.
std::optional<std::string> line(const std::vector<std::string>& lines, std::size_t i) {
  if (i >= lines.size() || lines[i].empty()) return std::nullopt;
  return lines[i];
}

void assumed_offset(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  check::AssumedOffset a{lines[0], line(lines, 4), line(lines, 3), line(lines, 1)};
  check::RefinementOptions o;
  o.scope = line(lines, 2);
  o.prove = options();
  stage("assumed-offset", [&] {
    const layout::BoundLayout assumed = check::assumed_from_offset(fixed().real, a);
    report(check::check_refinement(fixed().real, assumed, o));
  });
}

}  // namespace

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (size > 1 && data[0] % 3 != 2 && rng() % 2) {
    const std::size_t n = fuzz::mutate_json(data, size, max_size, 1, rng);
    if (n > 0) return n;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > kMaxInput) return 0;
  fixed();
  switch (data[0] % 3) {
    case 0: geometry(data + 1, size - 1); break;
    case 1: plan(data + 1, size - 1); break;
    default: assumed_offset(data + 1, size - 1); break;
  }
  return 0;
}

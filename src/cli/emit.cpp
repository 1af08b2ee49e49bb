// kvlayout emit: generate the relayout kernel of a proven translation.
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "cli/tensors_gate.hpp"
#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout emit SRC DST --cache CACHE --target cpu|cuda [-o FILE] [--name FN] [--specs DIR]
                     [--allow-not-exact] [--param NAME=VALUE] [--naive]
                     [--tensors DUMP] [--target-tensors DUMP]

Proves SRC -> DST on CACHE and prints the relayout kernel that performs it: a self-contained C++17 file
(CPU, std::thread) or CUDA C++ file whose header records the proof (pair, spec hashes, cache shape,
grade, reasons, tool version) and documents its C ABI:

  extern "C" int FN(void* const* src, void* const* dst, const int32_t* const* src_tables,
                    const int32_t* const* dst_tables, int64_t num_tokens, int num_threads);

src[i] / dst[i] are the bases of the i-th tensor instance of each side in declaration order, tables in
declaration order; tokens [0, num_tokens) are moved; table entries and num_tokens are checked first and
a non-zero code returned instead of writing out of bounds.

  --target cpu|cuda     the kernel's target (required)
  -o FILE               write the kernel to FILE (default: standard output)
  --name FN             the exported function (default kvlayout_relayout)
  --allow-not-exact     emit a NOT_EXACT move, converting element types (said so in the header)
  --param NAME=VALUE    override a layout or cache-shape parameter (e.g. num_tokens=8192)
  --naive               a per-element reference kernel with div/mod per element (for benchmarks)
  --tensors DUMP        first check SRC's declaration against the real tensors in DUMP (written by
                        scripts/dump_tensors.py); a mismatch prints GEOMETRY_MISMATCH, emits nothing
  --target-tensors DUMP the same for DST

Exit: 0 emitted; 1 the pair is not EXACT_BYTE, EXACT_TOKEN or SUBSET (the grade and reason are printed)
or a dump of --tensors / --target-tensors is a GEOMETRY_MISMATCH;
2 bad input or a pair the generator cannot express; 3 the proof was UNKNOWN.
)";

}  // namespace

int run_emit(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"target", true}, {"output", true, false, "o"}, {"name", true},
                        {"allow-not-exact", false}, {"param", true, true}, {"naive", false}, {"limit-ms", true},
                        {"tensors", true}, {"target-tensors", true}});
  if (args.help()) {
    std::cout << kHelp;
    return kOk;
  }
  if (args.positional().size() != 2)
    throw spec::SpecError("", "", std::to_string(args.positional().size()) + " layout argument(s)",
                          "kvlayout emit SRC DST --cache CACHE --target cpu|cuda");
  emit::EmitOptions options;
  std::string target = args.value("target").value_or("");
  if (target == "cpu") options.target = emit::Target::Cpu;
  else if (target == "cuda") options.target = emit::Target::Cuda;
  else throw spec::SpecError("", "--target", target.empty() ? "no --target" : "\"" + target + "\"", "cpu or cuda");
  if (auto n = args.value("name")) options.name = *n;
  options.allow_not_exact = args.has("allow-not-exact");
  options.naive = args.has("naive");
  if (options.naive && options.target == emit::Target::Cuda)
    throw spec::SpecError("", "--naive", "--naive with --target cuda", "--naive with --target cpu");
  auto [source, target_layout, cache] = pair_from(catalog_from(args), args);
  if (auto code = gate_tensors(args, source, target_layout, cache, overrides_from(args), false)) return *code;
  prove::ProveOptions prove_options;
  prove_options.limit_ms = limit_ms_from(args, prove_options.limit_ms);
  prove::Proof proof = prove::prove(source, target_layout, cache, prove_options, overrides_from(args));
  if (proof.grade == prove::Grade::Unknown) {
    std::cerr << "kvlayout emit: the proof of " << source->name << " -> " << target_layout->name
              << " is UNKNOWN; nothing emitted (see kvlayout prove)\n";
    return kUnknown;
  }
  if (!emit::emittable(proof.grade, options.allow_not_exact)) {
    std::cerr << "kvlayout emit: refused: " << source->name << " -> " << target_layout->name << " on " << cache.name << " is "
              << prove::grade_name(proof.grade) << " [" << prove::info(proof.reason).code << "]: " << prove::info(proof.reason).message
              << (proof.unblocked_by.empty() ? "" : "\n  unblocked by: " + proof.unblocked_by)
              << (proof.grade == prove::Grade::NotExact ? "\n  (--allow-not-exact emits it with its element conversion)" : "") << "\n";
    return kNegative;
  }
  std::string source_text;
  try {
    source_text = emit::emit_kernel(proof, options);
  } catch (const emit::EmitError& e) {
    throw spec::SpecError(source->file + " -> " + target_layout->file, "",
                          "a pair the kernel generator cannot express: " + std::string(e.what()),
                          "index expressions over coordinates with block tables indexed by the token");
  }
  if (auto out = args.value("output")) {
    std::ofstream file(*out);
    if (!file) throw spec::SpecError(*out, "", "a file that cannot be written", "a writable output path");
    file << source_text;
  } else {
    std::cout << source_text;
  }
  return kOk;
}

}  // namespace kvlayout::cli

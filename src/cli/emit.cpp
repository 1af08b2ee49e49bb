// kvlayout emit: generate the relayout kernel of a proven translation.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "cli/tensors_gate.hpp"
#include "emit/abi.hpp"
#include "emit/emit.hpp"
#include "emit/group_kernels.hpp"
#include "emit/plan.hpp"
#include "prove/group_report.hpp"
#include "prove/report.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

using emit::EmitError;

const char* kHelp = R"(usage: kvlayout emit SRC DST --cache CACHE --target cpu|cuda [-o FILE|DIR] [--name FN] [--specs DIR]
                     [--allow-not-exact] [--param NAME=VALUE] [--naive]
                     [--source-param NAME=VALUE] [--target-param NAME=VALUE]
                     [--tensors DUMP] [--target-tensors DUMP] [--json]

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
  --json                print {"proof", "kernel", "abi"} instead of the kernel alone: the proof as
                        `kvlayout prove --json` prints it, the kernel's text (null when refused; with -o
                        FILE it is written there and "kernel" is null), and its ABI as data:
                        {"function", "target", "signature", "max_tokens", "source": {"layout",
                         "buffers": [{"pointer", "tensor", "instance", "per", "per_value", "elements",
                         "dtype", "element_bytes", "bytes"}], "tables": [{"pointer", "name", "length",
                         "first", "end"}]}, "destination": {...}, "return_codes": [{"code", "meaning"}]}
  --source-param NAME=VALUE, --target-param NAME=VALUE
                        bind a layout parameter of one side only (e.g. tp_size=1 -> tp_size=2)

Rank families (a declaration with "ranks", e.g. vllm-flash-nhd-tp): when SRC or DST is one, the group
translation is proven (as kvlayout prove does; a plain layout is a group of one) and ONE kernel is
emitted per rank pair that exchanges data: the pair kernel of (source rank -> target rank restricted to
the heads and layers that source rank feeds it), each with the C ABI above, src[] the source rank's
tensors and dst[] the target rank's. A target rank is complete once every kernel naming it has run (in
any order; their positions are disjoint). -o DIR is required: it receives FN_t<T>_from_s<S>.cpp (.cu for
cuda), T and S the target and source ranks (row-major over the rank axes), and group.json, the manifest:
  {"source_group", "target_group", "cache", "grade", "target", "abi",
   "kernels": [{"target_rank", "source_rank", "target_ranks", "source_ranks", "heads": [first, end],
                "layers": [first, end], "source_layout", "target_layout", "piece", "grade",
                "function", "file"}]}
(heads / layers null when the content has no such axis); one line per kernel goes to standard output.

Exit: 0 emitted; 1 the pair is not EXACT_BYTE, EXACT_TOKEN or SUBSET (the grade and reason are printed)
or a dump of --tensors / --target-tensors is a GEOMETRY_MISMATCH;
2 bad input or a pair the generator cannot express; 3 the proof was UNKNOWN. A group is refused as a
pair is (its grade and reason printed, exit 1; UNKNOWN exits 3).
)";

// "a pair the kernel generator cannot express" (exit 2), as SpecError.
[[noreturn]] void inexpressible(const std::string& files, const EmitError& e) {
  throw spec::SpecError(files, "", "a pair the kernel generator cannot express: " + std::string(e.what()),
                        "index expressions over coordinates with block tables indexed by the token");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  if (!file) throw spec::SpecError(path, "", "a file that cannot be written", "a writable output path");
  file << text;
}

// The grade refusal of a proof (pair or group), as `emit` prints it: the exit code, or nullopt to emit.
std::optional<int> refusal(const prove::Proof& proof, const std::string& what, const std::string& cache,
                           const emit::EmitOptions& options) {
  if (proof.grade == prove::Grade::Unknown) {
    std::cerr << "kvlayout emit: the proof of " << what << " is UNKNOWN; nothing emitted (see kvlayout prove)\n";
    return kUnknown;
  }
  if (emit::emittable(proof.grade, options.allow_not_exact)) return std::nullopt;
  std::cerr << "kvlayout emit: refused: " << what << " on " << cache << " is " << prove::grade_name(proof.grade) << " ["
            << prove::info(proof.reason).code << "]: " << prove::info(proof.reason).message
            << (proof.unblocked_by.empty() ? "" : "\n  unblocked by: " + proof.unblocked_by)
            << (proof.grade == prove::Grade::NotExact ? "\n  (--allow-not-exact emits it with its element conversion)" : "")
            << "\n";
  return kNegative;
}

// One kernel per rank pair of a group translation, and the manifest, into -o DIR.
int emit_group(const GroupPair& groups, const spec::CacheShape& cache, const Arguments& args, const emit::EmitOptions& options) {
  auto dir = args.value("output");
  if (!dir)
    throw spec::SpecError("", "-o", "a rank family without -o DIR",
                          "-o DIR (a group emits one kernel per rank pair, and group.json)");
  prove::ProveOptions prove_options;
  prove_options.limit_ms = limit_ms_from(args, prove_options.limit_ms);
  const layout::Overrides overrides = overrides_from(args);
  prove::GroupProof g = prove::prove_group(groups.source, groups.target, cache, prove_options, overrides);
  const std::string what = g.source.title() + " -> " + g.target.title();
  if (auto code = refusal(g.proof, what, cache.name, options)) return *code;
  std::vector<emit::GroupPiece> pieces = emit::group_pieces(g);
  for (const auto& p : pieces) {
    // Each piece's pair proof (made by prove_group) licenses its kernel as a pair's proof does.
    const std::string pair = p.proof.source_layout->name + " -> " + p.proof.target_layout->name;
    if (auto code = refusal(p.proof, pair + " (" + prove::format_assignment(g, p.assignment) + ")", cache.name, options))
      return *code;
  }
  std::vector<emit::GroupKernel> kernels;
  try {
    kernels = emit::emit_group_kernels(pieces, options);
  } catch (const emit::EmitError& e) {
    inexpressible(g.source.declaration->file + " -> " + g.target.declaration->file, e);
  }
  std::error_code ec;
  std::filesystem::create_directories(*dir, ec);
  if (!std::filesystem::is_directory(*dir))
    throw spec::SpecError(*dir, "-o", "not a directory that can be created", "a writable output directory");
  for (const auto& k : kernels) write_file((std::filesystem::path(*dir) / k.file).string(), k.text);
  write_file((std::filesystem::path(*dir) / "group.json").string(),
             emit::group_manifest(g, pieces, kernels, options).dump(2) + "\n");
  std::cout << what << " on " << cache.name << ": " << prove::grade_name(g.proof.grade) << ", " << kernels.size()
            << " kernel(s) in " << *dir << " (manifest group.json)\n";
  for (std::size_t i = 0; i < kernels.size(); ++i)
    std::cout << "  " << kernels[i].file << "  " << kernels[i].function << "  "
              << prove::format_assignment(g, pieces[i].assignment) << "\n";
  return kOk;
}

}  // namespace

int run_emit(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"target", true}, {"output", true, false, "o"}, {"name", true},
                        {"allow-not-exact", false}, {"param", true, true}, {"naive", false}, {"limit-ms", true},
                        {"tensors", true}, {"target-tensors", true}, {"source-param", true, true},
                        {"target-param", true, true}, {"json", false}});
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
  LayoutPair pair = pair_from(catalog_from(args), args);
  if (auto code = gate_tensors(args, pair.source, pair.target, pair.cache, overrides_from(args), false)) return *code;
  const bool json = args.has("json");
  if (auto groups = groups_from(pair, args)) {
    if (json)
      throw spec::SpecError("", "--json", "--json with a rank family", "no --json: a group's JSON is its manifest, -o DIR/group.json");
    return emit_group(*groups, pair.cache, args, options);
  }
  const auto& source = pair.source;
  const auto& target_layout = pair.target;
  const spec::CacheShape& cache = pair.cache;
  prove::ProveOptions prove_options;
  prove_options.limit_ms = limit_ms_from(args, prove_options.limit_ms);
  prove::Proof proof = prove::prove(source, target_layout, cache, prove_options, overrides_from(args));
  spec::Json document = {{"proof", prove::to_json(proof)}, {"kernel", nullptr}, {"abi", nullptr}};
  if (auto code = refusal(proof, source->name + " -> " + target_layout->name, cache.name, options)) {
    if (json) std::cout << document.dump(2) << "\n";
    return *code;
  }
  std::string source_text;
  try {
    source_text = emit::emit_kernel(proof, options);
  } catch (const emit::EmitError& e) {
    inexpressible(source->file + " -> " + target_layout->file, e);
  }
  const auto out = args.value("output");
  if (out) write_file(*out, source_text);
  if (json) {
    if (!out) document["kernel"] = source_text;
    document["abi"] = emit::to_json(emit::kernel_abi(proof, options));
    std::cout << document.dump(2) << "\n";
  } else if (!out) {
    std::cout << source_text;
  }
  return kOk;
}

}  // namespace kvlayout::cli

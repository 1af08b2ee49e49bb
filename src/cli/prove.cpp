// kvlayout prove: decide one ordered pair on one cache shape.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "cli/progress.hpp"
#include "cli/tensors_gate.hpp"
#include "prove/group_report.hpp"
#include "prove/obligation_registry.hpp"
#include "prove/report.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout prove SRC DST --cache CACHE [--specs DIR] [--json] [--limit-ms N]
                      [--smt-dir DIR] [--param NAME=VALUE] [--source-param NAME=VALUE]
                      [--target-param NAME=VALUE] [--tensors DUMP] [--target-tensors DUMP]

Proves, or refutes with a counterexample, that moving a KV cache from layout SRC to layout DST is exact,
over the whole index space of the cache shape (block tables as arbitrary injective maps; nothing is
enumerated). The obligations, in order, are listed below; the grade is the worst finding:
  EXACT_BYTE   every byte of SRC returns after SRC -> DST -> SRC
  EXACT_TOKEN  every position survives; SRC has padding that is not carried
  SUBSET       DST holds fewer positions; those it holds arrive exactly
  NOT_EXACT    an element value or its quantisation scale changes
  REFUSED      no exact move exists (content, fit, bounds, collision, missing positions)
  UNKNOWN      the solver gave no answer within its limits (never counted as a proof)

  SRC, DST, CACHE     names under --specs (default: the shipped specs/) or paths to JSON files
  --limit-ms N        limit per solver query (default 5000); a limit reached is UNKNOWN
  --smt-dir DIR       write every solver query as SMT-LIB2 (replay with the z3 command)
  --param NAME=VALUE  override a layout or cache-shape parameter on both sides
  --source-param NAME=VALUE, --target-param NAME=VALUE
                      bind a layout parameter of one side only (e.g. tp_size=1 -> tp_size=2)

Rank families (a declaration with "ranks", e.g. vllm-flash-nhd-tp): when SRC or DST is one, the move is
between groups (TP 1 -> 2, 4 -> 2, replicated heads, PP stages; a plain layout is a group of one). Each
instance is proven on its own, covers/carries range over the groups' union, and the assignment (which
source rank feeds which target rank, by heads and layers) is proven piece by piece and printed; --json
adds "assignment": [{"target_rank", "source_rank", "heads": [first, end], "layers": [first, end]}].
  --json              print the proof as JSON (and a geometry mismatch as the check JSON)
  --tensors DUMP      first check SRC's declaration against the real tensors in DUMP (written by
                      scripts/dump_tensors.py); a mismatch prints GEOMETRY_MISMATCH and exits 1, unproved
  --target-tensors DUMP  the same for DST

On a terminal, stderr shows the obligations done / total, elapsed and ETA while the proof runs.

Exit: 0 EXACT_BYTE or EXACT_TOKEN; 1 SUBSET, NOT_EXACT, REFUSED or GEOMETRY_MISMATCH; 3 UNKNOWN; 2 bad input (including a
domain or index expression that divides by zero or overflows somewhere on the cache shape: see defined);
4 internal error (e.g. a counterexample that does not reproduce).

Obligations (from the obligation registry):
)";

// The help text's obligation list, one line per registry row.
std::string obligation_list() {
  std::string out;
  for (const auto& row : prove::obligation_registry()) {
    std::string sides;
    for (prove::Side s : row.sides) sides += (sides.empty() ? "" : ", ") + prove::side_name(s);
    std::string head = "  " + row.name + " (" + sides + ")";
    out += head + std::string(head.size() < 30 ? 30 - head.size() : 1, ' ') + row.question + "\n";
  }
  return out;
}

}  // namespace

int run_prove(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"json", false}, {"limit-ms", true}, {"smt-dir", true},
                        {"param", true, true}, {"source-param", true, true},
                        {"target-param", true, true}, {"tensors", true}, {"target-tensors", true}});
  if (args.help()) {
    std::cout << kHelp << obligation_list();
    return kOk;
  }
  if (args.positional().size() != 2)
    throw spec::SpecError("", "", std::to_string(args.positional().size()) + " layout argument(s)",
                          "kvlayout prove SRC DST --cache CACHE");
  LayoutPair pair = pair_from(catalog_from(args), args);
  const spec::CacheShape& cache = pair.cache;
  prove::ProveOptions options;
  options.limit_ms = limit_ms_from(args, options.limit_ms);
  options.smt_dir = args.value("smt-dir");
  // Progress on a terminal (obligations done / total, elapsed, ETA); silent under --json or in a pipe.
  Progress progress(terminal_progress_wanted(args.has("json")));
  const std::string what = "prove " + pair.source->name + " -> " + pair.target->name;
  if (terminal_progress_wanted(args.has("json")))
    options.progress = [&](const std::string&, std::size_t done, std::size_t total) { progress.update(what, done, total); };
  if (auto code = gate_tensors(args, pair.source, pair.target, cache, overrides_from(args), args.has("json"))) return *code;
  prove::Grade grade;
  if (auto groups = groups_from(pair, args)) {
    prove::GroupProof g = prove::prove_group(groups->source, groups->target, cache, options, overrides_from(args));
    if (args.has("json")) std::cout << prove::group_to_json(g).dump(2) << "\n";
    else std::cout << prove::format_group_text(g);
    grade = g.proof.grade;
  } else {
    prove::Proof proof = prove::prove(pair.source, pair.target, cache, options, overrides_from(args));
    if (args.has("json")) std::cout << prove::to_json(proof).dump(2) << "\n";
    else std::cout << prove::format_text(proof);
    grade = proof.grade;
  }
  switch (grade) {
    case prove::Grade::ExactByte:
    case prove::Grade::ExactToken: return kOk;
    case prove::Grade::Unknown: return kUnknown;
    default: return kNegative;
  }
}

}  // namespace kvlayout::cli

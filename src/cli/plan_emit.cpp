// kvlayout plan emit: the verified transfer plan of a proven pair (families, runs or descriptors).
#include <iostream>
#include <optional>

#include "check/plan_emit.hpp"
#include "check/plan_emit_group.hpp"
#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "emit/emit.hpp"
#include "emit/group_pieces.hpp"
#include "emit/plan.hpp"
#include "prove/group_report.hpp"
#include "layout/block_tables.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout plan emit SRC DST --cache CACHE [--format families|runs|descriptors] [--json]
                          [--param NAME=VALUE ...] [--table side.NAME=v0,v1,...] [--base side=ADDR] [--scope EXPR]
                          [--specs DIR] [--source-param NAME=VALUE] [--target-param NAME=VALUE]

Proves SRC -> DST on CACHE and prints the transfer plan that performs it with the fewest contiguous runs,
as plan JSON that `kvlayout plan check` accepts (schema: specs/plans.md):

  families      symbolic descriptor families over index variables, offsets as expressions over the
                variables and both sides' block tables (source.T[e], target.T[e]): valid for every table
  runs          concrete strided runs {addr, len, stride, count} per side for the given tables (identity by
                default), regions at consecutive 4 KiB-aligned bases from 0, one per tensor instance
  descriptors   the same as flat [[addr, len], ...] lists (refused past 10^7 descriptors)

  --table side.NAME=v0,...   a concrete block table (e.g. --table source.block_table=3,0,1,2)
  --base side=ADDR           concrete forms: the side's first region at ADDR (decimal or 0x hex; default 0)
  --scope EXPR               emit only the positions where EXPR holds (single-coordinate bounds)
  --json                     the plan JSON only (it is printed either way; without --json a one-line
                             summary also goes to stderr)
  --source-param NAME=VALUE, --target-param NAME=VALUE
                             bind a layout parameter of one side only (e.g. tp_size=1 -> tp_size=2)

Rank families (a declaration with "ranks", e.g. vllm-flash-nhd-tp): when SRC or DST is one, the group
translation is proven (as kvlayout prove does) and one plan is printed per rank pair that exchanges data,
the descriptor family a connector registers between that source rank's buffers and that target rank's:
  {"comment", "source_group", "target_group", "cache", "grade",
   "plans": [{"target_rank", "source_rank", "target_ranks", "source_ranks", "heads": [first, end],
              "layers": [first, end], "source_layout", "target_layout", "piece", "grade", "plan"}]}
Each "plan" is in the chosen format, for the pair source_layout -> piece (the target rank restricted to
the heads and layers that source rank feeds it); --table, --base and --scope apply to every rank pair.

Exit: 0 emitted; 1 the pair (or group) is not EXACT_BYTE, EXACT_TOKEN or SUBSET; 2 bad input; 3 the proof
was UNKNOWN.
)";

// The grade refusal of a proof (pair or group): the exit code, or nullopt to emit.
std::optional<int> refusal(const prove::Proof& proof, const std::string& what, const std::string& cache) {
  if (proof.grade == prove::Grade::Unknown) {
    std::cerr << "kvlayout plan emit: the proof of " << what << " is UNKNOWN; nothing emitted (see kvlayout prove)\n";
    return kUnknown;
  }
  if (check::plan_emittable(proof)) return std::nullopt;
  std::cerr << "kvlayout plan emit: refused: " << what << " on " << cache << " is " << prove::grade_name(proof.grade) << " ["
            << prove::info(proof.reason).code << "]: " << prove::info(proof.reason).message
            << (proof.unblocked_by.empty() ? "" : "\n  unblocked by: " + proof.unblocked_by) << "\n";
  return kNegative;
}

[[noreturn]] void inexpressible(const std::string& files, const emit::EmitError& e) {
  throw spec::SpecError(files, "", "a pair the move plan cannot express: " + std::string(e.what()),
                        "index expressions over coordinates with block tables indexed by the token");
}

std::vector<std::int64_t> parse_entries(const std::string& name, const std::string& list) {
  std::vector<std::int64_t> entries;
  std::size_t start = 0;
  while (!list.empty()) {
    std::size_t comma = list.find(',', start);
    entries.push_back(parse_integer(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                                    "--table " + name + " entry"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return entries;
}

}  // namespace

int run_plan_emit(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"format", true}, {"json", false}, {"param", true, true},
                        {"table", true, true}, {"scope", true}, {"base", true, true}, {"limit-ms", true},
                        {"source-param", true, true}, {"target-param", true, true}});
  if (args.help()) {
    std::cout << kHelp;
    return kOk;
  }
  if (args.positional().size() != 2)
    throw spec::SpecError("", "", std::to_string(args.positional().size()) + " layout argument(s)",
                          "kvlayout plan emit SRC DST --cache CACHE [--format families|runs|descriptors]");
  check::PlanEmitOptions options;
  const std::string format = args.value("format").value_or("families");
  if (format == "families") options.format = check::PlanFormat::Families;
  else if (format == "runs") options.format = check::PlanFormat::Runs;
  else if (format == "descriptors") options.format = check::PlanFormat::Descriptors;
  else throw spec::SpecError("", "--format", "\"" + format + "\"", "families, runs or descriptors");
  options.scope = args.value("scope");
  LayoutPair pair = pair_from(catalog_from(args), args);
  auto groups = groups_from(pair, args);
  const auto& source = pair.source;
  const auto& target = pair.target;
  const spec::CacheShape& cache = pair.cache;
  prove::ProveOptions prove_options;
  prove_options.limit_ms = limit_ms_from(args, prove_options.limit_ms);
  std::optional<prove::GroupProof> group;
  std::vector<emit::GroupPiece> pieces;
  prove::Proof proof;
  if (groups) {
    group = prove::prove_group(groups->source, groups->target, cache, prove_options, overrides_from(args));
    if (auto code = refusal(group->proof, group->source.title() + " -> " + group->target.title(), cache.name)) return *code;
    pieces = emit::group_pieces(*group);
    for (const auto& p : pieces)
      if (auto code = refusal(p.proof, p.proof.source_layout->name + " -> " + p.proof.target_layout->name, cache.name))
        return *code;
  } else {
    proof = prove::prove(source, target, cache, prove_options, overrides_from(args));
    if (auto code = refusal(proof, source->name + " -> " + target->name, cache.name)) return *code;
  }
  for (const std::string& t : args.values("table")) {
    const std::size_t eq = t.find('=');
    const std::string name = t.substr(0, eq);
    const std::size_t dot = name.find('.');
    const std::string side = dot == std::string::npos ? "" : name.substr(0, dot);
    if (eq == std::string::npos || (side != "source" && side != "target"))
      throw spec::SpecError("", "--table", "\"" + t + "\"", "source.NAME=v0,v1,... or target.NAME=v0,v1,...");
  }
  // The tables apply to each pair's own bound sides (every rank pair of a group alike).
  auto options_for = [&](const prove::Proof& p) {
    check::PlanEmitOptions o = options;
    for (const std::string& t : args.values("table")) {
      const std::size_t eq = t.find('=');
      const std::string name = t.substr(0, eq);
      const std::size_t dot = name.find('.');
      const std::string side = name.substr(0, dot);
      const layout::BoundLayout& bound = side == "source" ? *p.source_bound : *p.target_bound;
      auto& tables = side == "source" ? o.source_tables : o.target_tables;
      if (!tables) tables = layout::identity_tables(bound);
      layout::set_table(bound, *tables, name.substr(dot + 1), parse_entries(name, t.substr(eq + 1)));
    }
    return o;
  };
  for (const std::string& b : args.values("base")) {
    const std::size_t eq = b.find('=');
    const std::string side = b.substr(0, eq);
    std::int64_t value = -1;
    try {
      std::size_t used = 0;
      const std::string text = eq == std::string::npos ? "" : b.substr(eq + 1);
      value = std::stoll(text, &used, 0);
      if (used != text.size()) value = -1;
    } catch (const std::exception&) {
      value = -1;
    }
    if (eq == std::string::npos || (side != "source" && side != "target") || value < 0)
      throw spec::SpecError("", "--base", "\"" + b + "\"", "source=ADDR or target=ADDR (a non-negative integer, decimal or 0x hex)");
    (side == "source" ? options.source_base : options.target_base) = value;
  }
  if (group) {
    nlohmann::ordered_json plans;
    try {
      plans = check::emit_group_plans(*group, pieces, options_for);
    } catch (const emit::EmitError& e) {
      inexpressible(source->file + " -> " + target->file, e);
    }
    std::cout << plans.dump(args.has("json") ? -1 : 1) << "\n";
    if (!args.has("json")) {
      std::size_t families = 0;
      for (const auto& p : plans["plans"])
        families += p["plan"].contains("families") ? p["plan"]["families"].size() : 0;
      std::cerr << "kvlayout plan emit: " << group->source.title() << " -> " << group->target.title() << " on " << cache.name
                << " (" << prove::grade_name(group->proof.grade) << "): " << pieces.size() << " rank pair(s)";
      if (format == "families") std::cerr << ", " << families << " families";
      std::cerr << "\n";
      for (const auto& p : pieces) std::cerr << "  " << prove::format_assignment(*group, p.assignment) << "\n";
    }
    return kOk;
  }
  nlohmann::json plan;
  try {
    plan = check::emit_plan(proof, options_for(proof));
  } catch (const emit::EmitError& e) {
    inexpressible(source->file + " -> " + target->file, e);
  }
  std::cout << plan.dump(args.has("json") ? -1 : 1) << "\n";
  if (!args.has("json")) {
    std::string what = format == "families" ? std::to_string(plan["families"].size()) + (plan["families"].size() == 1 ? " family" : " families")
                       : format == "runs"   ? std::to_string(plan["source_runs"].size()) + " runs per side"
                                            : std::to_string(plan["source_descriptors"].size()) + " descriptors per side";
    std::cerr << "kvlayout plan emit: " << source->name << " -> " << target->name << " on " << cache.name << " ("
              << prove::grade_name(proof.grade) << "): " << what << "\n";
  }
  return kOk;
}

}  // namespace kvlayout::cli

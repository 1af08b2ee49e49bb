// kvlayout plan emit: the verified transfer plan of a proven pair (families, runs or descriptors).
#include <iostream>

#include "check/plan_emit.hpp"
#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "layout/block_tables.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout plan emit SRC DST --cache CACHE [--format families|runs|descriptors] [--json]
                          [--param NAME=VALUE ...] [--table side.NAME=v0,v1,...] [--base side=ADDR] [--scope EXPR]
                          [--specs DIR]

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

Exit: 0 emitted; 1 the pair is not EXACT_BYTE, EXACT_TOKEN or SUBSET; 2 bad input; 3 the proof was UNKNOWN.
)";

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
                        {"table", true, true}, {"scope", true}, {"base", true, true}, {"limit-ms", true}});
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
  auto [source, target, cache] = pair_from(catalog_from(args), args);
  prove::ProveOptions prove_options;
  prove_options.limit_ms = limit_ms_from(args, prove_options.limit_ms);
  prove::Proof proof = prove::prove(source, target, cache, prove_options, overrides_from(args));
  if (proof.grade == prove::Grade::Unknown) {
    std::cerr << "kvlayout plan emit: the proof of " << source->name << " -> " << target->name
              << " is UNKNOWN; nothing emitted (see kvlayout prove)\n";
    return kUnknown;
  }
  if (!check::plan_emittable(proof)) {
    std::cerr << "kvlayout plan emit: refused: " << source->name << " -> " << target->name << " on " << cache.name << " is "
              << prove::grade_name(proof.grade) << " [" << prove::info(proof.reason).code << "]: " << prove::info(proof.reason).message
              << (proof.unblocked_by.empty() ? "" : "\n  unblocked by: " + proof.unblocked_by) << "\n";
    return kNegative;
  }
  for (const std::string& t : args.values("table")) {
    const std::size_t eq = t.find('=');
    const std::string name = t.substr(0, eq);
    const std::size_t dot = name.find('.');
    const std::string side = dot == std::string::npos ? "" : name.substr(0, dot);
    if (eq == std::string::npos || (side != "source" && side != "target"))
      throw spec::SpecError("", "--table", "\"" + t + "\"", "source.NAME=v0,v1,... or target.NAME=v0,v1,...");
    const layout::BoundLayout& bound = side == "source" ? *proof.source_bound : *proof.target_bound;
    auto& tables = side == "source" ? options.source_tables : options.target_tables;
    if (!tables) tables = layout::identity_tables(bound);
    layout::set_table(bound, *tables, name.substr(dot + 1), parse_entries(name, t.substr(eq + 1)));
  }
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
  nlohmann::json plan;
  try {
    plan = check::emit_plan(proof, options);
  } catch (const emit::EmitError& e) {
    throw spec::SpecError(source->file + " -> " + target->file, "", "a pair the move plan cannot express: " + std::string(e.what()),
                          "index expressions over coordinates with block tables indexed by the token");
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

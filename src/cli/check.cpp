// kvlayout check: an assumed layout against the real one (refinement), and/or a declaration against the
// tensors a connector really holds (geometry, --tensors).
#include <iostream>

#include "check/assumed_offset.hpp"
#include "check/geometry.hpp"
#include "check/refinement.hpp"
#include "check/verdict.hpp"
#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "layout/bound_layout.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout check REAL ASSUMED --cache CACHE [--scope EXPR] [--json] [--param NAME=VALUE ...]
                      [--specs DIR] [--limit-ms N] [--tensors DUMP.json]
       kvlayout check REAL --cache CACHE --assumed-offset EXPR [--assumed-tensor NAME]
                      [--assumed-instance COORD|0] [--assumed-holds EXPR] [--scope EXPR] ...
       kvlayout check REAL --cache CACHE --tensors DUMP.json

Checks the layout a kernel or connector ASSUMES against the engine's REAL one: wherever ASSUMED holds a
position, REAL must store it in the tensor of the same name, at the same instance and element, under every
block table (tables paired by name). A refinement, not an equality: ASSUMED may cover part of REAL (one
rank's heads, one layer range). Symbolic over the whole cache shape; nothing is enumerated. The steps, in
order: content, tables (bad input if they differ), value, defined, in-bounds, refines, covers-scope.

  REAL, ASSUMED, CACHE   names under --specs (default: the shipped specs/) or paths to JSON files
  --assumed-offset EXPR  ASSUMED as an element-offset formula into one tensor of REAL, over the content's
                         coordinates, REAL's parameters and tables (e.g. 'kv * num_blocks * 16 * 8 * 128
                         + block_table[token / 16] * 16 * 8 * 128 + token % 16 * 8 * 128 + head * 128 + dim')
  --assumed-tensor NAME  the tensor it addresses (default: REAL's only tensor)
  --assumed-instance C   the instance rule: a coordinate name or 0 (default: REAL's)
  --assumed-holds EXPR   the positions it holds (default: every position)
  --scope EXPR           also require every in-scope position REAL holds to be held by ASSUMED (UNCOVERED)
  --tensors DUMP.json    check REAL's declared geometry against the real tensors first
                         (scripts/dump_tensors.py writes DUMP); alone with REAL, only that
  --param NAME=VALUE     override a layout or cache-shape parameter (on both layouts)
  --limit-ms N           limit per solver query (default 5000); a limit reached is UNKNOWN
  --json                 print {"verdict", "message", "counterexample", "obligations"}

Exit: 0 OK; 1 any other verdict; 3 UNKNOWN; 2 bad input (different content, a table or tensor ASSUMED
names that REAL lacks, an expression that divides by zero or overflows); 4 internal error.

Verdicts:
)";

std::string verdict_list() {
  std::string out;
  for (const auto& row : check::verdict_table()) {
    std::string head = "  " + std::string(row.code);
    out += head + std::string(head.size() < 20 ? 20 - head.size() : 1, ' ') + row.meaning + "\n";
  }
  return out;
}

int report(const check::CheckResult& r, const std::string& title, bool json) {
  if (json) std::cout << check::to_json(r).dump(2) << "\n";
  else std::cout << check::format_text(r, title);
  return check::exit_code(r.verdict);
}

}  // namespace

int run_check(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"json", false}, {"limit-ms", true}, {"smt-dir", true},
                        {"param", true, true}, {"scope", true}, {"tensors", true}, {"assumed-offset", true},
                        {"assumed-tensor", true}, {"assumed-instance", true}, {"assumed-holds", true}});
  if (args.help()) {
    std::cout << kHelp << verdict_list();
    return kOk;
  }
  const auto& pos = args.positional();
  const bool inline_assumed = args.has("assumed-offset");
  for (const char* f : {"assumed-tensor", "assumed-instance", "assumed-holds"})
    if (args.has(f) && !inline_assumed)
      throw spec::SpecError("", std::string("--") + f, std::string("--") + f + " without --assumed-offset",
                            "--assumed-offset EXPR with it");
  const bool geometry_only = pos.size() == 1 && !inline_assumed;
  if (pos.empty() || pos.size() > 2 || (pos.size() == 2 && inline_assumed) || (geometry_only && !args.has("tensors")))
    throw spec::SpecError("", "", std::to_string(pos.size()) + " layout argument(s)" +
                                      (inline_assumed ? " with --assumed-offset" : ""),
                          "kvlayout check REAL ASSUMED --cache C, kvlayout check REAL --assumed-offset EXPR --cache C, "
                          "or kvlayout check REAL --cache C --tensors DUMP.json");
  if (geometry_only && args.has("scope"))
    throw spec::SpecError("", "--scope", "--scope without ASSUMED", "an ASSUMED layout or --assumed-offset");
  spec::Catalog catalog = catalog_from(args);
  spec::CacheShape cache = cache_from(catalog, args);
  const layout::Overrides overrides = overrides_from(args);
  const layout::BoundLayout real = bind_fitting(layout_from(catalog, pos[0]), cache, overrides);
  check::RefinementOptions options;
  options.prove.limit_ms = limit_ms_from(args, options.prove.limit_ms);
  options.prove.smt_dir = args.value("smt-dir");
  options.scope = args.value("scope");
  const bool json = args.has("json");

  // Geometry first: a declaration that is not the real tensor makes every other answer moot.
  std::optional<check::CheckStep> geometry;
  if (auto dump_file = args.value("tensors")) {
    check::CheckResult g = check::check_geometry(real, check::load_tensor_dump(*dump_file));
    if (geometry_only || g.verdict != check::Verdict::Ok)
      return report(g, "check " + real.layout->name + " geometry on " + cache.name, json);
    if (!g.steps.empty()) geometry = g.steps.front();
  }
  layout::BoundLayout assumed =
      inline_assumed ? check::assumed_from_offset(real, {*args.value("assumed-offset"), args.value("assumed-tensor"),
                                                         args.value("assumed-instance"), args.value("assumed-holds")})
                     : bind_fitting(layout_from(catalog, pos[1]), cache, overrides);
  check::CheckResult r = check::check_refinement(real, assumed, options);
  if (geometry) r.steps.insert(r.steps.begin(), *geometry);
  return report(r, "check " + assumed.layout->name + " against " + real.layout->name + " on " + cache.name, json);
}

}  // namespace kvlayout::cli

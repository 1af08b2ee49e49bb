// kvlayout plan check: is a transfer plan a user wrote (descriptor lists, strided runs, slot maps, symbolic
// families) the right move from SRC's tensors to DST's? The plan schema is specs/plans.md.
#include <iostream>

#include "check/plan_check.hpp"
#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "layout/bound_layout.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout plan check SRC DST --cache CACHE --plan PLAN.json [--json] [--param NAME=VALUE ...]
                           [--specs DIR] [--limit-ms N]

Checks a transfer plan against the two layouts: every destination byte the plan writes must receive the
byte of the same logical position (at the same byte within the element), nothing outside the scope may be
written, and every in-scope position must be written. Forms (specs/plans.md):
  descriptors  registered regions per side, descriptor lists [[addr, len], ...] (or [addr, len, devID]) or
               strided runs {addr, len, stride, count}, optional index pairs (default: by position) or
               {src, dst, len} transfers, the block tables in force, the scope (default: every position
               DST holds). Decided by run arithmetic: a million descriptors in seconds.
  slots        a request's tokens and the block or slot ids holding them on each side.
  families     symbolic descriptor families over index variables, proven for every value and table.

  SRC, DST, CACHE     names under --specs (default: the shipped specs/) or paths to JSON files
  --plan FILE         the plan (JSON)
  --param NAME=VALUE  override a layout or cache-shape parameter on both sides (e.g. num_tokens)
  --limit-ms N        limit per solver query (families; explaining a counterexample byte)
  --json              print {"verdict", "message", "counterexample", "checked": {"descriptors", "bytes"}, "ms"}

Precedence when several apply: VALUE_CHANGE, OUT_OF_BOUNDS, ALIASED, WRONG_MAPPING, FRAME_VIOLATION,
UNCOVERED. Paired descriptors of different lengths are bad input (NIXL rejects them when prepared).
Exit: 0 OK; 1 any other verdict; 2 bad input; 3 UNKNOWN; 4 internal error.

Verdicts:
)";


std::string verdict_list() {
  std::string out;
  for (const auto& row : check::verdict_table()) {
    std::string head = std::string("  ") + row.code;
    out += head + std::string(head.size() < 22 ? 22 - head.size() : 1, ' ') + row.meaning + "\n";
  }
  return out;
}

}  // namespace

int run_plan_check(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"plan", true}, {"json", false}, {"limit-ms", true},
                        {"param", true, true}});
  if (args.help()) {
    std::cout << kHelp << verdict_list();
    return kOk;
  }
  if (args.positional().size() != 2)
    throw spec::SpecError("", "", std::to_string(args.positional().size()) + " layout argument(s)",
                          "kvlayout plan check SRC DST --cache CACHE --plan PLAN.json");
  const auto plan_file = args.value("plan");
  if (!plan_file) throw spec::SpecError("", "--plan", "nothing", "--plan PLAN.json");
  auto [source, target, cache] = pair_from(catalog_from(args), args);
  prove::ProveOptions options;
  options.limit_ms = limit_ms_from(args, options.limit_ms);
  const layout::Overrides overrides = overrides_from(args);
  const layout::BoundLayout s = bind_fitting(source, cache, overrides);
  const layout::BoundLayout t = bind_fitting(target, cache, overrides);
  const nlohmann::json plan = spec::read_plain_json_file(*plan_file);
  const check::CheckResult r = check::check_plan(s, t, plan, *plan_file, options);
  if (args.has("json")) std::cout << check::to_json(r).dump(2) << "\n";
  else std::cout << check::format_text(r, "plan check " + source->name + " -> " + target->name);
  return check::exit_code(r.verdict);
}

}  // namespace kvlayout::cli

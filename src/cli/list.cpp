// kvlayout list: every declared layout with its citation.
#include <iomanip>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout list [--specs DIR] [--json]

Lists every layout declared under the specs directory (default: the shipped specs/): name, engine,
content, element type, control flag and the engine source it was read from.

  --specs DIR   read declarations from DIR instead of the shipped specs/
  --json        print a JSON array of {name, engine, content, dtype, control, cite, ranks, instance_of,
                evidence, observed, file}: ranks is {"tp_rank": "tp_size", ...} for a rank family,
                instance_of names the family a thin instance declaration binds, evidence is "observed"
                (the engine's own code ran in conformance/ and agreed), "declared" or "control", observed
                is {package, test, checks} or null

Exit: 0 listed; 2 a declaration is malformed (the message names its file and JSON path).
)";

// {"tp_rank": "tp_size"} for a rank family, null otherwise.
spec::Json ranks_json(const spec::Layout& l) {
  if (l.ranks.empty()) return nullptr;
  spec::Json out = spec::Json::object();
  for (const auto& axis : l.ranks) out[axis.rank] = axis.size;
  return out;
}

// "family tp_rank<tp_size" / "= vllm-flash-nhd-tp" (a thin instance) / "".
std::string group_text(const spec::Layout& l) {
  if (!l.instance_of.empty()) return "= " + l.instance_of;
  std::string out;
  for (const auto& axis : l.ranks) out += (out.empty() ? "family " : ",") + axis.rank + "<" + axis.size;
  return out;
}

spec::Json cite_json(const spec::Layout& l) {
  if (!l.cite) return nullptr;
  spec::Json c = {{"repo", l.cite->repo}, {"path", l.cite->path}, {"symbol", l.cite->symbol}};
  if (!l.cite->commit.empty()) c["commit"] = l.cite->commit;
  if (!l.cite->version.empty()) c["version"] = l.cite->version;
  if (!l.cite->note.empty()) c["note"] = l.cite->note;
  return c;
}

}  // namespace

int run_list(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"json", false}});
  if (args.help()) {
    std::cout << kHelp;
    return kOk;
  }
  args.require_no_positional();
  spec::Catalog catalog = catalog_from(args);
  std::vector<std::shared_ptr<const spec::Layout>> layouts = spec::load_layouts(catalog);

  if (args.has("json")) {
    spec::Json out = spec::Json::array();
    for (const auto& l : layouts)
      out.push_back({{"name", l->name},
                     {"engine", l->engine},
                     {"content", l->content.name},
                     {"dtype", spec::dtype_name(l->dtype)},
                     {"control", l->control},
                     {"cite", cite_json(*l)},
                     {"ranks", ranks_json(*l)},
                     {"instance_of", l->instance_of.empty() ? spec::Json(nullptr) : spec::Json(l->instance_of)},
                     {"evidence", spec::evidence_kind(*l)},
                     {"observed", l->observed ? spec::Json{{"package", l->observed->package}, {"test", l->observed->test},
                                                           {"checks", l->observed->checks}}
                                              : spec::Json(nullptr)},
                     {"file", l->file}});
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  std::size_t name_w = 4, engine_w = 6, group_w = 5;
  for (const auto& l : layouts) {
    name_w = std::max(name_w, l->name.size());
    engine_w = std::max(engine_w, l->engine.size());
    group_w = std::max(group_w, group_text(*l).size());
  }
  std::cout << std::left << std::setw(static_cast<int>(name_w) + 2) << "NAME" << std::setw(static_cast<int>(engine_w) + 2)
            << "ENGINE" << std::setw(12) << "CONTENT" << std::setw(10) << "DTYPE" << std::setw(9) << "CONTROL"
            << std::setw(static_cast<int>(group_w) + 2) << "RANKS" << std::setw(10) << "EVIDENCE" << "CITATION\n";
  for (const auto& l : layouts) {
    std::cout << std::setw(static_cast<int>(name_w) + 2) << l->name << std::setw(static_cast<int>(engine_w) + 2)
              << l->engine << std::setw(12) << l->content.name << std::setw(10) << spec::dtype_name(l->dtype)
              << std::setw(9) << (l->control ? "control" : "") << std::setw(static_cast<int>(group_w) + 2) << group_text(*l)
              << std::setw(10) << (l->control ? "" : spec::evidence_kind(*l))
              << (l->cite ? spec::format_citation(*l->cite) : "-")
              << "\n";
  }
  std::cout << layouts.size() << " layouts in " << catalog.root().string() << "\n";
  return kOk;
}

}  // namespace kvlayout::cli

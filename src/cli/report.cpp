// kvlayout report | graph: what a certificate shows — the HTML report and the translation graph.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "report/backlog.hpp"
#include "report/certificate_view.hpp"
#include "report/graph_picture.hpp"
#include "report/html_report.hpp"
#include "report/translation_graph.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kReportHelp = R"(usage: kvlayout report [--certificate FILE] [--specs DIR] -o report.html [--no-dot]

Writes one self-contained HTML file (inline CSS, JS and SVG; nothing fetched) from a certificate: the grid
of ordered pairs, one square per pair coloured by grade (legend with counts), rows and columns labelled by
layout and engine with proven-equal declarations adjacent; hovering a square shows its grade, reason,
capability and proof time, clicking it the details (counterexample in named coordinates, positions
cross-checked, the cross-check's grade); filters by grade and engine; the capability backlog; the
translation graph (laid out by Graphviz dot when installed, else a built-in layout; the report says which);
the controls (mutation score, broken declarations, obligations switched off) and the provenance (tool
version, commit, spec hashes). Printable. Open it in any browser.

  --certificate FILE   the certificate (default: proofs/certificate.json beside the specs directory)
  --specs DIR          the specs the certificate was made from (engines, contents, kernel costs)
  -o FILE              where to write the HTML (required)
  --no-dot             lay the graph out with the built-in layout even when dot is installed

Exit: 0 written; 2 bad input (a file that is not a certificate, names the JSON path).
)";

const char* kGraphHelp = R"(usage: kvlayout graph [--certificate FILE] [--specs DIR] [--format dot|json|text]
                      [--route FROM TO] [--summary]

The translation graph of a certificate (Boost.Graph): vertices are layouts, proven-equal declarations
merged; edges are its rows, labelled with grade, reason and, for an exact move, the emitted kernel's cost
(its shortest contiguous run in bytes, cells moved as transposes or element by element); a non-exact
edge carries the capability that would unblock it.

  --format text        (default) the components of mutually exact layouts ("engines that can exchange
                       caches exactly": strong components of the exact edges), the composition control
                       and the capability backlog
  --format dot         the whole graph in Graphviz DOT (solid edges exact, dashed others); with
                       --summary, one node per exact component (what the report draws)
  --format json        {"vertices", "edges", "exact_components", "composition_violations"}
  --route FROM TO      the route from FROM to TO with the fewest non-exact steps (then the fewest steps),
                       each step's grade and, when not exact, its capability (text or json)

The composition control: A -> B and B -> C EXACT_BYTE must give A -> C EXACT_BYTE; a violation is a
prover bug (kvlayout certificate check fails on it too).

Exit: 0 printed (and the composition control holds); 1 a composition violation, or no route; 2 bad input.
)";

std::string default_certificate(const Arguments& args) {
  if (auto file = args.value("certificate")) return *file;
  const std::filesystem::path specs = args.value("specs").value_or(spec::default_specs_dir().string());
  return (specs.parent_path() / "proofs" / "certificate.json").string();
}

std::string layout_list(const report::TranslationGraph& g, const std::vector<report::VertexId>& vertices) {
  std::string out;
  for (auto v : vertices)
    for (const auto& m : g.graph[v].members) out += (out.empty() ? "" : ", ") + m;
  return out;
}

}  // namespace

int run_report(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"certificate", true}, {"specs", true}, {"output", true, false, "o"}, {"no-dot", false}});
  if (args.help()) {
    std::cout << kReportHelp;
    return kOk;
  }
  args.require_no_positional();
  const auto output = args.value("output");
  if (!output) throw spec::SpecError("", "-o", "no -o", "-o report.html");
  const report::CertificateView certificate = report::read_certificate(default_certificate(args));
  const spec::Catalog catalog = catalog_from(args);
  const report::TranslationGraph graph = report::build_graph(certificate, &catalog);
  const report::Picture picture = report::draw_graph(graph, !args.has("no-dot"));
  std::ofstream out(*output);
  if (!out) throw spec::SpecError(*output, "-o", "a file that cannot be written", "a writable output path");
  out << report::html_report(certificate, graph, picture);
  std::cerr << "kvlayout report: " << certificate.rows.size() << " pairs from " << certificate.file << " written to " << *output
            << " (graph laid out by " << picture.method << ")\n";
  return kOk;
}

int run_graph(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"certificate", true}, {"specs", true}, {"format", true}, {"route", false}, {"summary", false}});
  if (args.help()) {
    std::cout << kGraphHelp;
    return kOk;
  }
  const std::string format = args.value("format").value_or("text");
  if (format != "text" && format != "dot" && format != "json")
    throw spec::SpecError("", "--format", "\"" + format + "\"", "text, dot or json");
  const bool route = args.has("route");
  if (route ? args.positional().size() != 2 : !args.positional().empty())
    throw spec::SpecError("", "", std::to_string(args.positional().size()) + " positional argument(s)",
                          route ? "--route FROM TO" : "none (layout names go with --route FROM TO)");
  if (route && format == "dot") throw spec::SpecError("", "--format", "dot with --route", "text or json with --route");
  const report::CertificateView certificate = report::read_certificate(default_certificate(args));
  const spec::Catalog catalog = catalog_from(args);
  const report::TranslationGraph graph = report::build_graph(certificate, &catalog);

  if (route) {
    const auto& from = args.positional()[0];
    const auto& to = args.positional()[1];
    auto r = report::fewest_non_exact_route(graph, from, to);
    if (!r) {
      if (format == "json") std::cout << spec::Json{{"layouts", nullptr}, {"steps", nullptr}}.dump(2) << "\n";
      else std::cout << "no route from " << from << " to " << to << "\n";
      return kNegative;
    }
    if (format == "json") {
      std::cout << report::to_json(graph, *r).dump(2) << "\n";
    } else {
      std::cout << from << " -> " << to << ": " << r->steps.size() << " step(s), " << r->non_exact_steps << " not exact\n";
      for (const auto& s : r->steps)
        std::cout << "  " << s.source << " -> " << s.target << "  " << prove::grade_name(s.grade) << " [" << s.reason << "]"
                  << (s.exact() ? "" : s.capability.empty() ? "  (no capability named)" : "  needs: " + s.capability) << "\n";
    }
    return kOk;
  }
  const auto violations = report::composition_violations(graph);
  if (format == "dot") {
    std::cout << (args.has("summary") ? report::summary_dot(graph) : report::to_dot(graph));
  } else if (format == "json") {
    std::cout << report::to_json(graph).dump(2) << "\n";
  } else {
    const auto components = report::exact_components(graph);
    std::cout << boost::num_vertices(graph.graph) << " layouts (proven-equal declarations merged), " << boost::num_edges(graph.graph)
              << " edges; " << components.size() << " components of mutually exact layouts:\n";
    for (const auto& c : components) std::cout << "  [" << layout_list(graph, c) << "]\n";
    std::cout << "composition control (A->B, B->C EXACT_BYTE => A->C EXACT_BYTE): "
              << (violations.empty() ? "holds" : std::to_string(violations.size()) + " VIOLATIONS") << "\n";
    for (const auto& v : violations) std::cout << "  " << v.a << " -> " << v.b << " -> " << v.c << ", but " << v.a << " -> " << v.c << " is " << v.ac_grade << "\n";
    std::vector<report::BacklogRow> rows;
    for (const auto& r : certificate.rows) rows.push_back({r.source, r.target, r.grade, r.capability});
    std::cout << "\n" << report::format_backlog(report::capability_backlog(rows));
  }
  return violations.empty() ? kOk : kNegative;
}

}  // namespace kvlayout::cli

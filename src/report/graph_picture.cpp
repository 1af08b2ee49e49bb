#include "report/graph_picture.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "native/process.hpp"
#include "report/markup.hpp"

namespace kvlayout::report {
namespace {

// Graphviz's SVG, or "" when dot is missing or fails.
std::string with_dot(const std::string& dot_source) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvlayout-graph-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path in = dir / "graph.dot", out = dir / "graph.svg";
  std::ofstream(in) << dot_source;
  native::Process p{{"dot", "-Tsvg", in.string(), "-o", out.string()}, (dir / "dot.log").string()};
  std::string svg;
  if (native::start_process(p) && native::wait_for(p) == 0) {
    std::ifstream file(out);
    std::stringstream text;
    text << file.rdbuf();
    svg = text.str();
    const auto start = svg.find("<svg");
    svg = start == std::string::npos ? "" : svg.substr(start);
  }
  fs::remove_all(dir, ec);
  return svg;
}

// Components on a circle, exact moves between them as arrows.
std::string builtin(const TranslationGraph& g) {
  const auto components = exact_components(g);
  std::vector<std::size_t> component_of(boost::num_vertices(g.graph));
  for (std::size_t c = 0; c < components.size(); ++c)
    for (VertexId v : components[c]) component_of[v] = c;
  const double n = static_cast<double>(std::max<std::size_t>(components.size(), 1));
  const double radius = 120 + 22 * n, width = 2 * radius + 320, height = 2 * radius + 200;
  std::vector<std::pair<double, double>> at;
  for (std::size_t c = 0; c < components.size(); ++c) {
    const double angle = 2 * M_PI * static_cast<double>(c) / n - M_PI / 2;
    at.push_back({width / 2 + radius * std::cos(angle), height / 2 + radius * std::sin(angle)});
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << width << " " << height << "\">\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
      << "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#2e7d32\"/></marker></defs>\n";
  for (const auto& [pair, grade] : component_moves(g, component_of)) {
    const auto [a, b] = pair;
    const bool exact = prove::is_exact(grade);
    svg << "<line x1=\"" << at[a].first << "\" y1=\"" << at[a].second << "\" x2=\"" << at[b].first << "\" y2=\"" << at[b].second
        << "\" stroke=\"" << (exact ? "#2e7d32" : "#c0504d") << "\" stroke-opacity=\"0.6\"" << (exact ? "" : " stroke-dasharray=\"5,4\"")
        << " marker-end=\"url(#arrow)\"><title>" << prove::grade_name(grade) << "</title></line>\n";
  }
  for (std::size_t c = 0; c < components.size(); ++c) {
    std::vector<std::string> names;
    for (VertexId v : components[c])
      for (const auto& m : g.graph[v].members) names.push_back(m);
    const double h = 14.0 * static_cast<double>(std::min<std::size_t>(names.size(), 6)) + 8, w = 200;
    svg << "<g><rect x=\"" << at[c].first - w / 2 << "\" y=\"" << at[c].second - h / 2 << "\" width=\"" << w << "\" height=\"" << h
        << "\" rx=\"6\" fill=\"#eef5ee\" stroke=\"#555\"/>";
    for (std::size_t i = 0; i < names.size() && i < 6; ++i)
      svg << "<text x=\"" << at[c].first << "\" y=\"" << at[c].second - h / 2 + 16 + 14.0 * static_cast<double>(i)
          << "\" font-family=\"Helvetica,Arial,sans-serif\" font-size=\"11\" text-anchor=\"middle\">"
          << escape(i == 5 && names.size() > 6 ? "+" + std::to_string(names.size() - 5) + " more" : names[i]) << "</text>";
    svg << "</g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

Picture draw_graph(const TranslationGraph& g, bool use_dot) {
  if (use_dot) {
    std::string svg = with_dot(summary_dot(g));
    if (!svg.empty()) return {svg, "Graphviz dot"};
  }
  return {builtin(g), use_dot ? "built-in circular layout (Graphviz dot not found)" : "built-in circular layout"};
}

}  // namespace kvlayout::report

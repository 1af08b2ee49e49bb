#include "report/translation_graph.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include <functional>

#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/graph/strong_components.hpp>
#include <boost/property_map/function_property_map.hpp>

#include "emit/plan.hpp"
#include "layout/bound_layout.hpp"
#include "spec/cache_shape.hpp"
#include "spec/error.hpp"
#include "spec/layout.hpp"

namespace kvlayout::report {
namespace {

// What the specs say about each layout name: engine, content, the declaration itself.
struct Declarations {
  std::map<std::string, std::shared_ptr<const spec::Layout>> layouts;
  std::map<std::string, spec::CacheShape> caches;
  const spec::Catalog* catalog = nullptr;

  explicit Declarations(const spec::Catalog* c) : catalog(c) {
    if (!catalog) return;
    for (const auto& l : spec::load_layouts(*catalog)) layouts[l->name] = l;
  }
  const spec::CacheShape* cache(const std::string& name) {
    if (!catalog) return nullptr;
    auto it = caches.find(name);
    if (it != caches.end()) return &it->second;
    try {
      return &caches.emplace(name, spec::load_cache(catalog->find_cache(name).string())).first->second;
    } catch (const spec::SpecError&) {
      return nullptr;  // a derived shape ("small[head_size=128]") or one the specs no longer have
    }
  }
};

// The kernel plan's cost for an exact plain pair, or nullopt when it cannot be planned here.
std::optional<KernelCost> kernel_cost(Declarations& d, const RowView& row) {
  auto s = d.layouts.find(row.source), t = d.layouts.find(row.target);
  const spec::CacheShape* cache = d.cache(row.cache);
  if (row.group || s == d.layouts.end() || t == d.layouts.end() || cache == nullptr) return std::nullopt;
  try {
    const layout::BoundLayout S = layout::bind(s->second, *cache, {});
    const layout::BoundLayout T = layout::bind(t->second, *cache, {});
    if (!S.fits() || !T.fits()) return std::nullopt;
    const emit::Plan plan = emit::make_plan(S, T, emit::kCpuPlanOptions);  // the CPU kernel's plan
    KernelCost cost;
    cost.shortest_run_bytes = std::numeric_limits<std::int64_t>::max();
    for (const auto& cell : plan.cells) {
      ++cost.cells;
      const bool tiled = cell.tile_target_contiguous >= 0;
      cost.transposed_cells += tiled;
      cost.element_cells += !tiled && cell.run_elements == 1;
      cost.shortest_run_bytes = std::min(cost.shortest_run_bytes, cell.run_elements * S.element_bytes());
    }
    if (cost.cells == 0) return std::nullopt;
    return cost;
  } catch (const std::exception&) {
    return std::nullopt;  // a pair the planner cannot express: no cost to show
  }
}

const char* short_grade(prove::Grade g) {
  switch (g) {
    case prove::Grade::ExactByte: return "B";
    case prove::Grade::ExactToken: return "T";
    case prove::Grade::Subset: return "S";
    case prove::Grade::NotExact: return "N";
    case prove::Grade::Refused: return "R";
    default: return "U";
  }
}

std::string cost_text(const KernelCost& c) {
  return "run " + std::to_string(c.shortest_run_bytes) + " B" +
         (c.transposed_cells ? ", " + std::to_string(c.transposed_cells) + " transposed" : "") +
         (c.element_cells ? ", " + std::to_string(c.element_cells) + " by element" : "");
}

spec::Json edge_json(const TranslationEdge& e) {
  spec::Json j = {{"source", e.source}, {"target", e.target}, {"grade", prove::grade_name(e.grade)}, {"reason", e.reason},
                  {"exact", e.exact()}, {"cache", e.cache}, {"prove_ms", e.prove_ms}};
  j["capability"] = e.capability.empty() ? spec::Json(nullptr) : spec::Json(e.capability);
  if (e.cost)
    j["kernel_cost"] = {{"shortest_run_bytes", e.cost->shortest_run_bytes}, {"cells", e.cost->cells},
                        {"transposed_cells", e.cost->transposed_cells}, {"element_cells", e.cost->element_cells}};
  else
    j["kernel_cost"] = nullptr;
  return j;
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::map<std::pair<std::size_t, std::size_t>, prove::Grade> component_moves(const TranslationGraph& g,
                                                                             const std::vector<std::size_t>& component_of) {
  std::map<std::pair<std::size_t, std::size_t>, prove::Grade> best;
  for (auto [e, end] = boost::edges(g.graph); e != end; ++e) {
    const prove::Grade grade = g.graph[*e].grade;
    if (grade == prove::Grade::Refused || grade == prove::Grade::Unknown) continue;
    const std::size_t a = component_of[boost::source(*e, g.graph)], b = component_of[boost::target(*e, g.graph)];
    if (a == b) continue;
    auto [it, inserted] = best.emplace(std::make_pair(a, b), grade);
    if (!inserted && static_cast<int>(grade) < static_cast<int>(it->second)) it->second = grade;  // grades best first
  }
  return best;
}

TranslationGraph build_graph(const CertificateView& certificate, const spec::Catalog* catalog) {
  TranslationGraph g;
  Declarations d(catalog);
  // Phase 1: one vertex per class.
  for (const auto& members : certificate.classes) {
    LayoutVertex v;
    v.name = members.front();
    v.members = members;
    for (const auto& m : members) {
      auto it = d.layouts.find(m);
      v.engines.push_back(it == d.layouts.end() ? "" : it->second->engine);
      if (it != d.layouts.end() && v.content.empty()) v.content = it->second->content.name;
    }
    const VertexId id = boost::add_vertex(v, g.graph);
    for (const auto& m : members) g.vertex_of[m] = id;
  }
  // Phase 2: one edge per ordered pair of classes (the rows of equal classes are equal: the first stands).
  std::set<std::pair<VertexId, VertexId>> seen;
  for (const auto& row : certificate.rows) {
    const VertexId u = g.vertex_of.at(row.source), v = g.vertex_of.at(row.target);
    if (u == v || !seen.insert({u, v}).second) continue;
    TranslationEdge e;
    e.source = row.source;
    e.target = row.target;
    e.grade = row.grade;
    e.reason = row.reason;
    e.capability = row.capability;
    e.cache = row.cache;
    e.prove_ms = row.prove_ms;
    if (e.exact()) e.cost = kernel_cost(d, row);
    boost::add_edge(u, v, e, g.graph);
  }
  return g;
}

std::vector<std::vector<VertexId>> exact_components(const TranslationGraph& g) {
  auto exact_only = [&g](const Graph::edge_descriptor& e) { return g.graph[e].exact(); };
  boost::filtered_graph<Graph, std::function<bool(const Graph::edge_descriptor&)>> exact(g.graph, exact_only);
  std::vector<int> component(boost::num_vertices(g.graph));
  const int n = boost::strong_components(
      exact, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, g.graph)));
  std::vector<std::vector<VertexId>> out(static_cast<std::size_t>(n));
  for (VertexId v = 0; v < component.size(); ++v) out[static_cast<std::size_t>(component[v])].push_back(v);
  for (auto& c : out)
    std::sort(c.begin(), c.end(), [&g](VertexId a, VertexId b) { return g.graph[a].name < g.graph[b].name; });
  std::sort(out.begin(), out.end(), [&g](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : g.graph[a.front()].name < g.graph[b.front()].name;
  });
  return out;
}

std::optional<Route> fewest_non_exact_route(const TranslationGraph& g, const std::string& from, const std::string& to) {
  auto vertex = [&g](const std::string& name) {
    auto it = g.vertex_of.find(name);
    if (it == g.vertex_of.end()) throw spec::SpecError("", "", "\"" + name + "\"", "a layout of the certificate");
    return it->second;
  };
  const VertexId s = vertex(from), t = vertex(to);
  // A non-exact step costs more than any number of exact ones could (fewer than |V| of them on a path).
  const double non_exact = static_cast<double>(boost::num_vertices(g.graph) + 1);
  std::vector<VertexId> parent(boost::num_vertices(g.graph));
  std::vector<double> distance(boost::num_vertices(g.graph));
  boost::dijkstra_shortest_paths(
      g.graph, s,
      boost::weight_map(boost::make_function_property_map<Graph::edge_descriptor>(
                            [&](const Graph::edge_descriptor& e) { return g.graph[e].exact() ? 1.0 : non_exact; }))
          .predecessor_map(boost::make_iterator_property_map(parent.begin(), boost::get(boost::vertex_index, g.graph)))
          .distance_map(boost::make_iterator_property_map(distance.begin(), boost::get(boost::vertex_index, g.graph))));
  if (s != t && parent[t] == t) return std::nullopt;
  Route route;
  for (VertexId v = t;; v = parent[v]) {
    route.vertices.insert(route.vertices.begin(), v);
    if (v == s) break;
  }
  for (std::size_t i = 0; i + 1 < route.vertices.size(); ++i) {
    auto [e, found] = boost::edge(route.vertices[i], route.vertices[i + 1], g.graph);
    route.steps.push_back(g.graph[e]);
    route.non_exact_steps += !g.graph[e].exact();
  }
  return route;
}

std::vector<CompositionViolation> composition_violations(const TranslationGraph& g) {
  std::vector<CompositionViolation> out;
  const Graph& G = g.graph;
  for (auto [ab, ab_end] = boost::edges(G); ab != ab_end; ++ab) {
    if (G[*ab].grade != prove::Grade::ExactByte) continue;
    const VertexId a = boost::source(*ab, G), b = boost::target(*ab, G);
    for (auto [bc, bc_end] = boost::out_edges(b, G); bc != bc_end; ++bc) {
      if (G[*bc].grade != prove::Grade::ExactByte) continue;
      const VertexId c = boost::target(*bc, G);
      if (c == a) continue;
      auto [ac, found] = boost::edge(a, c, G);
      if (found && G[ac].grade == prove::Grade::ExactByte) continue;
      out.push_back({G[a].name, G[b].name, G[c].name, found ? prove::grade_name(G[ac].grade) : "(no row)"});
    }
  }
  return out;
}

std::string to_dot(const TranslationGraph& g) {
  std::ostringstream out;
  boost::write_graphviz(
      out, g.graph,
      [&g](std::ostream& o, VertexId v) {
        std::string label = dot_escape(g.graph[v].name);
        for (std::size_t i = 1; i < g.graph[v].members.size(); ++i) label += "\\n= " + dot_escape(g.graph[v].members[i]);
        o << "[label=\"" << label << "\"]";
      },
      [&g](std::ostream& o, const Graph::edge_descriptor& e) {
        const TranslationEdge& t = g.graph[e];
        std::string label = short_grade(t.grade);
        if (t.cost) label += " " + cost_text(*t.cost);
        o << "[label=\"" << dot_escape(label) << "\", grade=\"" << prove::grade_name(t.grade) << "\"";
        if (!t.exact()) o << ", style=dashed, capability=\"" << dot_escape(t.capability) << "\"";
        o << "]";
      },
      [](std::ostream& o) { o << "graph [rankdir=LR];\nnode [shape=box, fontname=\"Helvetica\"];\n"; });
  return out.str();
}

std::string summary_dot(const TranslationGraph& g) {
  const auto components = exact_components(g);
  std::vector<std::size_t> component_of(boost::num_vertices(g.graph));
  for (std::size_t c = 0; c < components.size(); ++c)
    for (VertexId v : components[c]) component_of[v] = c;
  std::ostringstream out;
  out << "digraph translations {\n  graph [rankdir=LR, nodesep=0.25, ranksep=0.6];\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef5ee\", fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [color=\"#2e7d32\", arrowsize=0.6];\n";
  for (std::size_t c = 0; c < components.size(); ++c) {
    std::string label;
    for (VertexId v : components[c])
      for (const auto& m : g.graph[v].members) label += (label.empty() ? "" : "\\n") + dot_escape(m);
    out << "  c" << c << " [label=\"" << label << "\"];\n";
  }
  for (const auto& [pair, grade] : component_moves(g, component_of)) {
    out << "  c" << pair.first << " -> c" << pair.second;
    if (prove::is_exact(grade)) out << ";\n";
    else
      out << " [style=dashed, color=\"" << (grade == prove::Grade::Subset ? "#b8860b" : "#c0504d") << "\", label=\""
          << prove::grade_name(grade) << "\", fontsize=8, fontname=\"Helvetica\"];\n";
  }
  out << "}\n";
  return out.str();
}

spec::Json to_json(const TranslationGraph& g) {
  spec::Json vertices = spec::Json::array(), edges = spec::Json::array(), components = spec::Json::array(),
             violations = spec::Json::array();
  for (auto [v, end] = boost::vertices(g.graph); v != end; ++v) {
    const LayoutVertex& x = g.graph[*v];
    vertices.push_back({{"name", x.name}, {"members", x.members}, {"engines", x.engines}, {"content", x.content}});
  }
  for (auto [e, end] = boost::edges(g.graph); e != end; ++e) edges.push_back(edge_json(g.graph[*e]));
  for (const auto& c : exact_components(g)) {
    spec::Json names = spec::Json::array();
    for (VertexId v : c)
      for (const auto& m : g.graph[v].members) names.push_back(m);
    components.push_back(names);
  }
  for (const auto& v : composition_violations(g))
    violations.push_back({{"a", v.a}, {"b", v.b}, {"c", v.c}, {"a_to_c", v.ac_grade}});
  return {{"vertices", vertices}, {"edges", edges}, {"exact_components", components}, {"composition_violations", violations}};
}

spec::Json to_json(const TranslationGraph& g, const Route& route) {
  spec::Json vertices = spec::Json::array(), steps = spec::Json::array();
  for (VertexId v : route.vertices) vertices.push_back(g.graph[v].name);
  for (const auto& s : route.steps) steps.push_back(edge_json(s));
  return {{"layouts", vertices}, {"steps", steps}, {"non_exact_steps", route.non_exact_steps}};
}

}  // namespace kvlayout::report

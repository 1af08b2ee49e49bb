#include "spec/parameter_order.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "spec/error.hpp"
#include "spec/name_check.hpp"

namespace kvlayout::spec {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

// Edges run from a parameter to the parameters it uses. DFS finishes a vertex after everything it uses,
// so finish order is a valid evaluation order; a back edge closes a cycle, which the tree edges recover.
struct OrderVisitor : boost::default_dfs_visitor {
  std::vector<Vertex>* finished;
  std::vector<Vertex>* parent;
  std::vector<Vertex>* cycle;
  void tree_edge(Edge e, const Graph& g) { (*parent)[boost::target(e, g)] = boost::source(e, g); }
  void back_edge(Edge e, const Graph& g) {
    if (!cycle->empty()) return;
    Vertex from = boost::source(e, g), to = boost::target(e, g);
    cycle->push_back(to);
    for (Vertex v = from; v != to; v = (*parent)[v]) cycle->push_back(v);
    std::reverse(cycle->begin() + 1, cycle->end());
  }
  void finish_vertex(Vertex v, const Graph&) { finished->push_back(v); }
};

}  // namespace

std::vector<std::size_t> parameter_order(const std::vector<Parameter>& params, const std::string& file) {
  Graph g(params.size());
  for (std::size_t i = 0; i < params.size(); ++i)
    for (const std::string& used : referenced_names(params[i].value.expr))
      for (std::size_t j = 0; j < params.size(); ++j)
        if (params[j].name == used) boost::add_edge(i, j, g);

  std::vector<Vertex> finished, parent(params.size()), cycle;
  OrderVisitor visitor;
  visitor.finished = &finished;
  visitor.parent = &parent;
  visitor.cycle = &cycle;
  boost::depth_first_search(g, boost::visitor(visitor));

  if (!cycle.empty()) {
    std::string chain;
    for (Vertex v : cycle) chain += params[v].name + " -> ";
    chain += params[cycle.front()].name;
    const Parameter& first = params[cycle.front()];
    throw SpecError(file, first.value.path, "a cyclic parameter definition " + chain,
                    "parameters defined without referring back to themselves");
  }
  return std::vector<std::size_t>(finished.begin(), finished.end());
}

}  // namespace kvlayout::spec

#pragma once
// The translation graph (Boost.Graph): vertices are layouts (a certificate's equivalence classes merged),
// edges are its rows between different classes, labelled with the grade, the reason, the capability that
// would unblock a non-exact one, and for an exact one the emitted kernel's cost (its shortest contiguous
// run, transposed and element-by-element cells). What it answers: which layouts can exchange caches
// exactly (strong components of the exact edges), the route between two layouts with the fewest
// non-exact steps, and a consistency control on the prover (exact moves compose).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "report/certificate_view.hpp"
#include "spec/catalog.hpp"

namespace kvlayout::report {

struct KernelCost {
  std::int64_t shortest_run_bytes = 0;  // the smallest contiguous run any cell copies
  int cells = 0;
  int transposed_cells = 0;             // moved in tiles (nothing contiguous on both sides)
  int element_cells = 0;                // runs of one element, not tiled
};

struct LayoutVertex {
  std::string name;                   // the class's first member
  std::vector<std::string> members;   // the class (proven-equal declarations)
  std::vector<std::string> engines;   // each member's engine (from the specs), "" when not found
  std::string content;
};

struct TranslationEdge {
  std::string source, target;  // the row's layouts (members of the two classes)
  prove::Grade grade = prove::Grade::Unknown;
  std::string reason, capability, cache;
  double prove_ms = 0;
  std::optional<KernelCost> cost;  // exact plain pairs whose kernel was planned
  bool exact() const { return prove::is_exact(grade); }
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, LayoutVertex, TranslationEdge>;
using VertexId = Graph::vertex_descriptor;

struct TranslationGraph {
  Graph graph;
  std::map<std::string, VertexId> vertex_of;  // every member name -> its class's vertex
};

// @post one vertex per class, one edge per ordered pair of different classes that has a row.
// `catalog` (may be null) supplies engines, contents and, for exact plain pairs, the kernel cost.
TranslationGraph build_graph(const CertificateView& certificate, const spec::Catalog* catalog);

// Strong components of the exact edges: sets of layouts any of which can be moved to any other by exact
// moves. Each sorted by name; components by size, descending.
std::vector<std::vector<VertexId>> exact_components(const TranslationGraph& g);

struct Route {
  std::vector<VertexId> vertices;            // from .. to
  std::vector<TranslationEdge> steps;        // vertices.size() - 1
  int non_exact_steps = 0;
};
// The route with the fewest non-exact steps (then the fewest steps) from `from` to `to` (Dijkstra);
// nullopt when no row connects them. @throws SpecError for a name that is not a vertex.
std::optional<Route> fewest_non_exact_route(const TranslationGraph& g, const std::string& from, const std::string& to);

// The composition control: A -> B and B -> C EXACT_BYTE must give A -> C EXACT_BYTE (for distinct
// classes A, C); each violation names the three layouts and A -> C's grade. Any is a prover bug.
struct CompositionViolation {
  std::string a, b, c;
  std::string ac_grade;  // "(no row)" when the certificate has none
};
std::vector<CompositionViolation> composition_violations(const TranslationGraph& g);

// The whole graph in Graphviz DOT (boost::write_graphviz): solid edges exact, dashed others.
std::string to_dot(const TranslationGraph& g);
// Between exact components (component_of[v] = v's component): the best grade of any move from a layout of
// one to a layout of another, REFUSED and UNKNOWN left out (they are not moves).
std::map<std::pair<std::size_t, std::size_t>, prove::Grade> component_moves(const TranslationGraph& g,
                                                                             const std::vector<std::size_t>& component_of);
// A summary for a picture: one node per exact component (its layouts listed), an edge per component_moves
// entry (solid exact, dashed and labelled otherwise).
std::string summary_dot(const TranslationGraph& g);
// {"vertices": [...], "edges": [...], "components": [[names]], "composition_violations": [...]}
spec::Json to_json(const TranslationGraph& g);
spec::Json to_json(const TranslationGraph& g, const Route& route);

}  // namespace kvlayout::report

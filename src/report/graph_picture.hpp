#pragma once
// The translation graph's summary (summary_dot) as inline SVG for the report: laid out by Graphviz `dot`
// when it is installed (Debian package graphviz), else by a simple built-in circular layout. The report
// says which.
#include <string>

#include "report/translation_graph.hpp"

namespace kvlayout::report {

struct Picture {
  std::string svg;     // an <svg> element (no XML prolog), ready to inline
  std::string method;  // "Graphviz dot" or "built-in circular layout (Graphviz dot not found)"
};

// @param use_dot  false forces the built-in layout (tests of both paths).
Picture draw_graph(const TranslationGraph& g, bool use_dot = true);

}  // namespace kvlayout::report

#pragma once
// `kvlayout report`: one self-contained HTML file (inline CSS, JS and SVG; no network) from a certificate:
// the grid of ordered pairs coloured by grade, each square's details one click away (grade, reason,
// capability, counterexample in named coordinates, positions cross-checked, proof time), filters by grade
// and engine, the capability backlog, the translation graph, the controls and the provenance.
#include <string>

#include "report/certificate_view.hpp"
#include "report/graph_picture.hpp"
#include "report/translation_graph.hpp"

namespace kvlayout::report {

// @post one <a class="sq"> per certificate row, with data-grade, data-source, data-target and an href to
// its details section (id "rI", I the row's index in the certificate); the legend's data-count per grade
// equals the rows of that grade.
std::string html_report(const CertificateView& certificate, const TranslationGraph& graph, const Picture& picture);

}  // namespace kvlayout::report

#include "report/html_report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/backlog.hpp"
#include "report/markup.hpp"

namespace kvlayout::report {
namespace {

const prove::Grade kGrades[] = {prove::Grade::ExactByte, prove::Grade::ExactToken, prove::Grade::Subset,
                                prove::Grade::NotExact,  prove::Grade::Refused,    prove::Grade::Unknown};

const char* kStyle = R"(
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 24px 48px;color:#1d1d1f}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.headline{max-width:1100px;color:#333}.muted{color:#666}code{font-size:12px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;vertical-align:-1px;margin-right:4px;border:1px solid #0002}
.g-EXACT_BYTE{background:#1b7837}.g-EXACT_TOKEN{background:#7fbf7b}.g-SUBSET{background:#fee08b}
.g-NOT_EXACT{background:#f4a582}.g-REFUSED{background:#c2453a}.g-UNKNOWN{background:#9e9e9e}
.filters{margin:8px 0;display:flex;gap:18px;flex-wrap:wrap;align-items:center}
table.grid{border-collapse:collapse;font-size:11px}table.grid td,table.grid th{padding:0}
table.grid th.row{text-align:left;padding-right:8px;white-space:nowrap;font-weight:normal}
table.grid th.row .eng{color:#777;font-size:10px;margin-left:4px}table.grid th.col{font-weight:normal;color:#555;width:15px;font-size:9px}
a.sq{display:block;width:13px;height:13px;margin:1px;border:1px solid #0002;box-sizing:border-box}
a.sq.dim{opacity:.08}a.sq.dis{outline:2px solid #000}a.sq:hover{outline:2px solid #0366d6}
tr.class-start th,tr.class-start td{border-top:2px solid #bbb}.eq{color:#0366d6;font-weight:bold}.obs{color:#1a7f37;font-weight:bold;margin-left:3px}
.detail{display:none}.detail:target{display:block;position:fixed;right:18px;top:18px;width:440px;max-height:88vh;overflow:auto;background:#fff;border:1px solid #bbb;box-shadow:0 6px 24px #0003;padding:12px 16px;font-size:13px;z-index:5}
.detail h3{margin:0 0 6px;font-size:15px}.detail dt{font-weight:600;margin-top:6px}.detail dd{margin:0 0 0 10px}
.close{float:right;text-decoration:none;font-size:18px}
table.t{border-collapse:collapse;font-size:13px}table.t td,table.t th{border-bottom:1px solid #eee;padding:3px 10px 3px 0;text-align:left;vertical-align:top}
.graph svg{max-width:100%;height:auto}
@media print{.filters,.detail{display:none!important}a.sq.dim{opacity:1}body{margin:0}}
)";

const char* kScript = R"(
function kvApply(){
  var grades={};document.querySelectorAll('input.fg').forEach(function(e){grades[e.value]=e.checked;});
  var engine=document.getElementById('engine').value;
  document.querySelectorAll('a.sq').forEach(function(a){
    var ok=grades[a.dataset.grade]&&(!engine||a.dataset.se===engine||a.dataset.te===engine);
    a.classList.toggle('dim',!ok);});
}
document.addEventListener('DOMContentLoaded',function(){
  document.querySelectorAll('input.fg,#engine').forEach(function(e){e.addEventListener('change',kvApply);});
});
)";

// The engine family a layout belongs to, for the filter: its name up to the first '-' ("vllm", "sglang").
std::string family(const std::string& layout) { return layout.substr(0, layout.find('-')); }

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, ms < 10 ? "%.2f ms" : "%.0f ms", ms);
  return text;
}

std::string coordinate_text(const spec::Json& coord) {
  std::string out;
  for (auto it = coord.begin(); it != coord.end(); ++it)
    out += (out.empty() ? "" : ", ") + it.key() + " " + it.value().dump();
  return "(" + out + ")";
}

std::string where_text(const spec::Json& side) {
  if (!side.is_object()) return "";
  if (side.contains("held") && side["held"] == false) return "not held";
  std::string out = side.value("tensor", std::string("?"));
  if (side.contains("instance")) out += "[" + side["instance"].dump() + "]";
  if (side.contains("offset")) out += " element " + side["offset"].dump();
  return out;
}

// The counterexample in named coordinates: its summary and up to four positions with where each side
// stores them.
std::string counterexample_html(const spec::Json& c) {
  if (!c.is_object()) return "<dd>none: every obligation was proved</dd>";
  std::string out = "<dd>" + escape(c.value("summary", std::string(""))) + "</dd>";
  if (c.contains("positions") && c["positions"].is_array()) {
    std::size_t shown = 0;
    for (const auto& p : c["positions"]) {
      if (shown++ == 4) {
        out += "<dd class=muted>... " + std::to_string(c["positions"].size() - 4) + " more</dd>";
        break;
      }
      std::string line = p.contains("coord") ? coordinate_text(p["coord"]) : "";
      if (p.contains("source")) line += ": source " + where_text(p["source"]);
      if (p.contains("target")) line += ", target " + where_text(p["target"]);
      out += "<dd><code>" + escape(line) + "</code></dd>";
    }
  }
  if (c.contains("obligation")) out += "<dd class=muted>decided by " + escape(c["obligation"].get<std::string>()) + "</dd>";
  return out;
}

std::string cross_check_html(const RowView& r) {
  const spec::Json& x = *r.cross_check;
  if (!x.is_object()) return "not recorded";
  if (x.value("checked", false) == false) return "NOT CROSS-CHECKED: " + escape(x.value("not_cross_checked", std::string("")));
  std::string out = std::to_string(r.positions_checked) + " positions enumerated on " + escape(x.value("cache", std::string("?"))) +
                    ": " + escape(x.value("grade", std::string("?"))) + " [" + escape(x.value("reason", std::string("?"))) + "]";
  out += x.value("agree", false) ? ", agrees with the prover there" : ", DISAGREES with the prover (" +
                                                                          escape(x.value("prover_grade", std::string("?"))) + ")";
  return out;
}

struct Layouts {
  std::vector<std::string> order;                  // rows and columns: classes in order, members adjacent
  std::map<std::string, std::size_t> index;        // name -> position in order
  std::map<std::string, std::string> engine;       // name -> engine ("" when unknown)
  std::map<std::string, std::size_t> class_size;   // name -> members in its class
  std::map<std::string, bool> class_start;
};

Layouts layouts_of(const CertificateView& c, const TranslationGraph& g) {
  Layouts l;
  for (const auto& members : c.classes)
    for (std::size_t i = 0; i < members.size(); ++i) {
      l.index[members[i]] = l.order.size();
      l.order.push_back(members[i]);
      l.class_size[members[i]] = members.size();
      l.class_start[members[i]] = i == 0;
    }
  for (auto [v, end] = boost::vertices(g.graph); v != end; ++v)
    for (std::size_t i = 0; i < g.graph[*v].members.size(); ++i) l.engine[g.graph[*v].members[i]] = g.graph[*v].engines[i];
  return l;
}

// The certificate's evidence record of one layout ({"evidence": "observed" | "declared" | "control", ...}), or
// an empty object (a certificate from before evidence was recorded).
spec::Json evidence_of(const CertificateView& c, const std::string& layout) {
  const spec::Json& d = c.document;
  if (d.contains("evidence") && d["evidence"].is_object() && d["evidence"].contains(layout) && d["evidence"][layout].is_object())
    return d["evidence"][layout];
  return spec::Json::object();
}

// "geometry + bytes": what agreed, from an evidence record.
std::string checks_text(const spec::Json& evidence) {
  std::string text;
  for (const auto& k : evidence.value("checks", spec::Json::array()))
    if (k.is_string()) text += (text.empty() ? "" : " + ") + k.get<std::string>();
  return text;
}

std::string observed_badge(const CertificateView& c, const std::string& layout) {
  const spec::Json e = evidence_of(c, layout);
  if (e.value("evidence", std::string()) != "observed") return "";
  return " <span class=obs title=\"observed: " + escape(e.value("package", std::string())) + " ran in " +
         escape(e.value("test", std::string())) + " and agreed (" + escape(checks_text(e)) + ")\">&#9679;</span>";
}

void header(std::ostringstream& out, const CertificateView& c) {
  const spec::Json& d = c.document;
  out << "<h1>kvlayout: exact KV-cache translations between serving engines</h1>\n<p class=headline>"
      << escape(d.value("headline", std::string(""))) << "</p>\n";
}

void legend_and_filters(std::ostringstream& out, const CertificateView& c, const Layouts& l) {
  std::map<prove::Grade, int> counts;
  for (const auto& r : c.rows) ++counts[r.grade];
  out << "<div class=legend id=legend>";
  for (prove::Grade g : kGrades)
    out << "<span data-grade=\"" << prove::grade_name(g) << "\" data-count=\"" << counts[g] << "\"><i class=\"sw g-"
        << prove::grade_name(g) << "\"></i>" << prove::grade_name(g) << " " << counts[g] << "</span>";
  out << "<span><i class=sw style=\"outline:2px solid #000\"></i>cross-check disagrees</span></div>\n<div class=filters>"
      << "<span>grades:";
  for (prove::Grade g : kGrades)
    out << " <label><input type=checkbox class=fg value=\"" << prove::grade_name(g) << "\" checked> " << prove::grade_name(g) << "</label>";
  out << "</span><label>engine: <select id=engine><option value=\"\">all</option>";
  std::vector<std::string> families;
  for (const auto& name : l.order)
    if (std::find(families.begin(), families.end(), family(name)) == families.end()) families.push_back(family(name));
  std::sort(families.begin(), families.end());
  for (const auto& f : families) out << "<option>" << escape(f) << "</option>";
  out << "</select></label><span class=muted>hover a square for its grade; click it for the details</span></div>\n";
}

void grid(std::ostringstream& out, const CertificateView& c, const Layouts& l) {
  // cell[i][j]: the row index of source order[i] -> target order[j].
  const std::size_t n = l.order.size();
  std::vector<std::vector<int>> cell(n, std::vector<int>(n, -1));
  for (std::size_t k = 0; k < c.rows.size(); ++k)
    cell[l.index.at(c.rows[k].source)][l.index.at(c.rows[k].target)] = static_cast<int>(k);
  out << "<table class=grid id=grid><tr><th></th>";
  for (std::size_t j = 0; j < n; ++j) out << "<th class=col title=\"" << escape(l.order[j]) << "\">" << j + 1 << "</th>";
  out << "</tr>\n";
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& s = l.order[i];
    out << "<tr" << (l.class_start.at(s) && i ? " class=class-start" : "") << "><th class=row title=\""
        << escape(l.engine.count(s) ? l.engine.at(s) : "") << "\">" << i + 1 << " " << escape(s)
        << (l.class_size.at(s) > 1 ? " <span class=eq title=\"proven equal to the other members of its class\">&equiv;</span>" : "")
        << observed_badge(c, s)
        << "<span class=eng>" << escape(l.engine.count(s) ? l.engine.at(s) : "") << "</span></th>";
    for (std::size_t j = 0; j < n; ++j) {
      const int k = cell[i][j];
      if (k < 0) {
        out << "<td></td>";
        continue;
      }
      const RowView& r = c.rows[static_cast<std::size_t>(k)];
      const std::string grade = prove::grade_name(r.grade);
      const bool disagrees = r.cross_check->is_object() && r.cross_check->value("checked", false) && !r.cross_check->value("agree", true);
      std::string title = r.source + " -> " + r.target + ": " + grade + " [" + r.reason + "]";
      if (!r.capability.empty()) title += "; unblocked by: " + r.capability;
      title += "; " + format_ms(r.prove_ms);
      out << "<td><a class=\"sq g-" << grade << (disagrees ? " dis" : "") << "\" href=\"#r" << k << "\" data-grade=\"" << grade
          << "\" data-source=\"" << escape(r.source) << "\" data-target=\"" << escape(r.target) << "\" data-se=\""
          << escape(family(r.source)) << "\" data-te=\"" << escape(family(r.target)) << "\" title=\"" << escape(title)
          << "\"></a></td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
}

// The emitted kernel's cost for an exact row (its classes' edge in the graph), as text; "" when unknown.
std::string kernel_text(const TranslationGraph& g, const RowView& r) {
  auto s = g.vertex_of.find(r.source), t = g.vertex_of.find(r.target);
  if (s == g.vertex_of.end() || t == g.vertex_of.end()) return "";
  auto [e, found] = boost::edge(s->second, t->second, g.graph);
  if (!found || !g.graph[e].cost) return "";
  const KernelCost& k = *g.graph[e].cost;
  return std::to_string(k.cells) + " cell(s), shortest contiguous run " + std::to_string(k.shortest_run_bytes) + " bytes" +
         (k.transposed_cells ? ", " + std::to_string(k.transposed_cells) + " moved as tiled transposes" : "") +
         (k.element_cells ? ", " + std::to_string(k.element_cells) + " element by element" : "");
}

void details(std::ostringstream& out, const CertificateView& c, const TranslationGraph& g) {
  out << "<div id=details>\n";
  for (std::size_t k = 0; k < c.rows.size(); ++k) {
    const RowView& r = c.rows[k];
    const std::string kernel = kernel_text(g, r);
    out << "<section class=detail id=\"r" << k << "\" data-grade=\"" << prove::grade_name(r.grade) << "\"><a class=close href=\"#\">&times;</a><h3>"
        << escape(r.source) << " &rarr; " << escape(r.target) << "</h3><dl><dt>grade</dt><dd><i class=\"sw g-"
        << prove::grade_name(r.grade) << "\"></i>" << prove::grade_name(r.grade) << " [" << escape(r.reason) << "]"
        << (r.group ? " (a group translation: a rank family on a side)" : "") << "</dd><dt>proven on</dt><dd>" << escape(r.cache)
        << " in " << format_ms(r.prove_ms) << "</dd><dt>unblocked by</dt><dd>"
        << (r.capability.empty() ? "<span class=muted>nothing needed</span>" : escape(r.capability)) << "</dd><dt>counterexample</dt>"
        << counterexample_html(*r.counterexample) << "<dt>cross-check</dt><dd>" << cross_check_html(r) << "</dd>"
        << (kernel.empty() ? "" : "<dt>kernel (kvlayout emit)</dt><dd>" + escape(kernel) + "</dd>") << "</dl></section>\n";
  }
  out << "</div>\n";
}

void backlog(std::ostringstream& out, const CertificateView& c) {
  std::vector<BacklogRow> rows;
  for (const auto& r : c.rows) rows.push_back({r.source, r.target, r.grade, r.capability});
  const auto items = capability_backlog(rows);
  out << "<h2 id=backlog>Capability backlog</h2><p class=muted>Every non-exact row, grouped by what would make it exact: the work "
         "that would unblock more moves.</p><table class=t><tr><th>pairs</th><th>grades</th><th>capability</th></tr>\n";
  for (const auto& i : items) {
    std::string grades;
    for (const auto& [g, n] : i.grades) grades += (grades.empty() ? "" : ", ") + g + " " + std::to_string(n);
    out << "<tr><td>" << i.rows.size() << "</td><td>" << grades << "</td><td>"
        << (i.capability.empty() ? "<span class=muted>none named: the move cannot be made exact</span>" : escape(i.capability))
        << "</td></tr>\n";
  }
  out << "</table>\n";
}

void graph_section(std::ostringstream& out, const TranslationGraph& g, const Picture& picture) {
  const auto components = exact_components(g);
  const auto violations = composition_violations(g);
  out << "<h2 id=graph>Translation graph</h2><p class=muted>Each box is a set of layouts that can exchange caches exactly "
         "(a strong component of the exact moves; proven-equal declarations merged). A solid arrow is an exact move from some "
         "layout of one box to some layout of another; a dashed one, the best move there is when none is exact (SUBSET or "
         "NOT_EXACT, labelled). Laid out by "
      << escape(picture.method) << ". <code>kvlayout graph</code> prints the whole graph (DOT or JSON) and routes between layouts.</p>"
      << "<div class=graph>" << picture.svg << "</div>\n<p>" << components.size() << " components of mutually exact layouts. "
      << "Composition control (A&rarr;B and B&rarr;C EXACT_BYTE give A&rarr;C EXACT_BYTE): "
      << (violations.empty() ? "holds on every triple." : std::to_string(violations.size()) + " violations (a prover bug).") << "</p>\n";
}

void controls(std::ostringstream& out, const CertificateView& c) {
  const spec::Json& k = c.document.contains("controls") ? c.document["controls"] : spec::Json::object();
  out << "<h2 id=controls>Controls</h2>";
  if (!k.is_object() || k.empty()) {
    out << "<p class=muted>This certificate has no controls (kvlayout matrix --certificate runs them).</p>\n";
    return;
  }
  out << "<p>Controls " << (k.value("ok", false) ? "all failed as they must" : "<b>did not all fail as they must</b>")
      << ". Mutation score <b>" << k.value("mutation_score", 0.0) << "</b>";
  if (k.contains("mutation") && k["mutation"].contains("verdicts")) {
    out << " (";
    bool first = true;
    for (auto it = k["mutation"]["verdicts"].begin(); it != k["mutation"]["verdicts"].end(); ++it, first = false)
      out << (first ? "" : ", ") << escape(it.key()) << " " << it.value().dump();
    out << ")";
  }
  out << ".</p>\n";
  if (k.contains("mutation") && k["mutation"].contains("by_kind")) {
    out << "<table class=t><tr><th>mutant kind</th><th>verdicts</th></tr>";
    for (auto it = k["mutation"]["by_kind"].begin(); it != k["mutation"]["by_kind"].end(); ++it) {
      std::string v;
      for (auto jt = it.value().begin(); jt != it.value().end(); ++jt) v += (v.empty() ? "" : ", ") + jt.key() + " " + jt.value().dump();
      out << "<tr><td>" << escape(it.key()) << "</td><td>" << escape(v) << "</td></tr>";
    }
    out << "</table>\n";
  }
  if (k.contains("broken")) {
    out << "<h3>Broken declarations (each must be refused for its reason)</h3><table class=t><tr><th>layout</th><th>expected</th>"
           "<th>as source</th><th>as target</th><th></th></tr>";
    for (const auto& b : k["broken"])
      out << "<tr><td>" << escape(b.value("layout", std::string(""))) << "</td><td>" << escape(b.value("expected_reason", std::string("")))
          << "</td><td>" << escape(b.value("as_source", std::string(""))) << "</td><td>" << escape(b.value("as_target", std::string("")))
          << "</td><td>" << (b.value("ok", false) ? "refused" : "<b>NOT refused</b>") << "</td></tr>";
    out << "</table>\n";
  }
  if (k.contains("self_checks")) {
    out << "<h3>Obligations switched off (the grade must change)</h3><table class=t><tr><th>obligation</th><th>pair</th>"
           "<th>with</th><th>without</th><th></th></tr>";
    for (const auto& s : k["self_checks"])
      out << "<tr><td>" << escape(s.value("obligation", std::string(""))) << "</td><td>" << escape(s.value("source", std::string("")))
          << " &rarr; " << escape(s.value("target", std::string(""))) << "</td><td>"
          << escape(s.value("grade_with_obligation", std::string(""))) << "</td><td>"
          << escape(s.value("grade_without_obligation", std::string(""))) << "</td><td>" << (s.value("ok", false) ? "caught" : "<b>missed</b>")
          << "</td></tr>";
    out << "</table>\n";
  }
}

// Which layouts an engine's own code produced (the conformance suite), and which are read from source only.
void evidence(std::ostringstream& out, const CertificateView& c) {
  const spec::Json& d = c.document;
  if (!d.contains("evidence") || !d["evidence"].is_object()) return;
  std::vector<std::string> observed, declared;
  for (auto it = d["evidence"].begin(); it != d["evidence"].end(); ++it) {
    const std::string kind = it.value().is_object() ? it.value().value("evidence", std::string()) : "";
    if (kind == "observed") observed.push_back(it.key());
    else if (kind == "declared") declared.push_back(it.key());
  }
  const spec::Json counts = d.contains("counts") ? d["counts"].value("evidence", spec::Json::object()) : spec::Json::object();
  out << "<h2 id=evidence>Evidence: observed and declared layouts</h2><p class=muted>" << observed.size()
      << " layouts are <b>observed</b> (<span class=obs>&#9679;</span>): <code>conformance/run.sh</code> installed the "
         "pinned release, ran its own allocation code on a small cache and the declaration agreed with the tensors' "
         "geometry and, where marked, with a pattern written through the engine's own write path at every position. "
      << declared.size() << " are <b>declared</b> from their cited source only. "
      << counts.value("rows_between_observed", 0) << " rows are between two observed layouts.</p>"
      << "<table class=t><tr><th>observed layout</th><th>release whose code ran</th><th>checks</th><th>test</th></tr>";
  for (const auto& name : observed) {
    const spec::Json e = evidence_of(c, name);
    out << "<tr><td>" << escape(name) << "</td><td><code>" << escape(e.value("package", std::string())) << "</code></td><td>"
        << escape(checks_text(e)) << "</td><td><code>" << escape(e.value("test", std::string())) << "</code></td></tr>";
  }
  out << "</table>\n<details><summary>" << declared.size() << " declared layouts</summary><table class=t>"
      << "<tr><th>layout</th><th>cited source</th></tr>";
  for (const auto& name : declared)
    out << "<tr><td>" << escape(name) << "</td><td><code>" << escape(evidence_of(c, name).value("cite", std::string())) << "</code></td></tr>";
  out << "</table></details>\n";
}

void provenance(std::ostringstream& out, const CertificateView& c) {
  const spec::Json& d = c.document;
  out << "<h2 id=provenance>Provenance</h2><table class=t><tr><td>certificate</td><td><code>" << escape(c.file) << "</code></td></tr>";
  if (d.contains("tool"))
    out << "<tr><td>tool</td><td>" << escape(d["tool"].value("name", std::string(""))) << " "
        << escape(d["tool"].value("version", std::string(""))) << "</td></tr>";
  if (d.contains("commit") && d["commit"].is_string()) out << "<tr><td>commit</td><td><code>" << escape(d["commit"].get<std::string>()) << "</code></td></tr>";
  if (d.contains("caches") && d["caches"].contains("proofs"))
    for (auto it = d["caches"]["proofs"].begin(); it != d["caches"]["proofs"].end(); ++it)
      out << "<tr><td>proofs (" << escape(it.key()) << ")</td><td>" << escape(it.value().dump()) << "</td></tr>";
  out << "</table>\n";
  if (d.contains("spec_hashes")) {
    out << "<details><summary>" << d["spec_hashes"].size() << " spec hashes (sha256)</summary><table class=t>";
    for (auto it = d["spec_hashes"].begin(); it != d["spec_hashes"].end(); ++it)
      out << "<tr><td><code>" << escape(it.key()) << "</code></td><td><code>" << escape(it.value().is_string() ? it.value().get<std::string>() : "")
          << "</code></td></tr>";
    out << "</table></details>\n";
  }
}

}  // namespace

std::string html_report(const CertificateView& certificate, const TranslationGraph& graph, const Picture& picture) {
  const Layouts l = layouts_of(certificate, graph);
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width\">"
      << "<title>kvlayout report</title><style>" << kStyle << "</style><script>" << kScript << "</script></head><body>\n";
  header(out, certificate);
  out << "<h2 id=matrix>Grade matrix</h2><p class=muted>Row = source layout, column = target layout (numbered as the rows); "
         "proven-equal declarations (&equiv;) are adjacent, separated from the next class by a line.</p>\n";
  legend_and_filters(out, certificate, l);
  grid(out, certificate, l);
  details(out, certificate, graph);
  backlog(out, certificate);
  graph_section(out, graph, picture);
  controls(out, certificate);
  evidence(out, certificate);
  provenance(out, certificate);
  out << "</body></html>\n";
  return out.str();
}

}  // namespace kvlayout::report

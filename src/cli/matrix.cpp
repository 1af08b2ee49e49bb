// kvlayout matrix: grade every ordered pair of declared layouts and cross-check each by enumeration.
#include <algorithm>
#include <memory>
#include <cstdio>
#include <thread>
#include <iostream>

#include <fstream>

#include "certificate/certificate.hpp"
#include "certificate/table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "cli/progress.hpp"
#include "prove/report.hpp"
#include "report/backlog.hpp"
#include "report/certificate_view.hpp"
#include "report/translation_graph.hpp"
#include "spec/error.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout matrix [--specs DIR] [--cache CACHE] [--cross-check SMALL_CACHE]
                       [--certificate FILE] [--json] [--jobs N] [--limit-ms N] [--no-group-rows]

Grades every ordered pair of the declared layouts (self pairs included): proofs on llama-3.1-70b for
per-head layouts and on deepseek-v3 for MLA layouts and mixed pairs (or on --cache for all), each row
cross-checked on the small cache by an independent enumeration that moves real bytes; the cross-check's
grade must equal the prover's on that same small cache, else the row is a DISAGREE. A pair with a layout
that does not fit the small cache is cross-checked on a small shape derived for it (the parameters its
failed requirements read set to the proof shape's value, or the first of a few candidates, that fits); a
row that still cannot be enumerated (no such shape, or a layout over the enumeration limits) is listed as
NOT CROSS-CHECKED with the reason and counted, never as cross-checked.

A row with a rank family on either side (a declaration with "ranks", e.g. vllm-flash-nhd-tp) is graded as a
group translation at the family's default sizes and cross-checked by enumerating both groups. Then the
group rows: a table of families moved between group sizes on real models (TP 1 <-> 2 <-> 4, whole <-> TP,
replicated KV heads, PP stages), each proven on its model and cross-checked the same way on a small shape.

  --cache CACHE            prove every row of the grid on this cache shape (group rows: on their models)
  --cross-check CACHE      the enumerable cache shape (default small)
  --certificate FILE       also run the controls and write the certificate JSON to FILE
  --jobs N                 rows decided in parallel (default: the number of hardware threads)
  --limit-ms N             solver limit per query (default 5000)
  --json                   print rows and counts as JSON
  --no-group-rows          skip the group-row table (for a specs directory without its families and
                           models); a certificate records it, and its check replays it so

Progress (rows, rank families, control mutants: done / total, elapsed, ETA) goes to stderr when it is a
terminal, never into a pipe or under --json. The text output ends with the capability backlog: every
non-exact row grouped by what would unblock it (kvlayout graph and kvlayout report show it too).

Exit: 0 every row decided and no cross-check disagreed (rows not cross-checked are listed and counted);
1 a DISAGREE, an internal error in a row (a group row naming a layout or model the specs lack included) or a
failed control; 3 an UNKNOWN row; 2 bad input.
)";

}  // namespace

certificate::MatrixOptions matrix_options_from(const Arguments& args) {
  certificate::MatrixOptions o;
  o.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.cache = args.value("cache");
  if (auto c = args.value("cross-check")) o.cross_check_cache = *c;
  if (auto j = args.value("jobs")) {
    o.jobs = static_cast<int>(parse_integer(*j, "--jobs"));
    if (o.jobs < 1 || o.jobs > 256) throw spec::SpecError("", "", "--jobs " + *j, "a number of jobs from 1 to 256");
  }
  o.prove.limit_ms = limit_ms_from(args, o.prove.limit_ms);
  o.group_rows = !args.has("no-group-rows");
  // Progress on a terminal only (rows, rank families, control mutants: done / total, elapsed, ETA).
  if (terminal_progress_wanted(args.has("json"))) {
    auto progress = std::make_shared<Progress>(true);
    o.progress = [progress](const std::string& phase, std::size_t done, std::size_t total) { progress->update(phase, done, total); };
  }
  return o;
}

int run_matrix(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"cross-check", true}, {"certificate", true}, {"json", false},
                        {"jobs", true}, {"limit-ms", true}, {"no-group-rows", false}});
  if (args.help()) {
    std::cout << kHelp;
    return kOk;
  }
  args.require_no_positional();
  spec::Catalog catalog = catalog_from(args);
  certificate::MatrixOptions options = matrix_options_from(args);
  certificate::Matrix m = certificate::run_matrix(catalog, options);

  if (args.has("json")) {
    spec::Json rows = spec::Json::array();
    for (const auto& r : m.rows)
      rows.push_back({{"source", r.source}, {"target", r.target}, {"cache", r.cache}, {"grade", prove::grade_name(r.grade)},
                      {"reason", prove::info(r.reason).code}, {"unblocked_by", r.unblocked_by.empty() ? spec::Json(nullptr) : spec::Json(r.unblocked_by)},
                      {"prove_ms", r.prove_ms}, {"positions_checked", r.cross.positions_checked},
                      {"cross_check", certificate::cross_check_json(r)},
                      {"error", r.error.empty() ? spec::Json(nullptr) : spec::Json(r.error)}});
    spec::Json group_rows = spec::Json::array();
    for (const auto& r : m.group_rows) group_rows.push_back(certificate::group_row_json(r));
    std::cout << spec::Json{{"rows", rows}, {"classes", m.classes}, {"disagree", m.disagreements()}, {"unknown", m.unknowns()},
                            {"errors", m.errors()}, {"not_cross_checked", m.not_cross_checked()},
                            {"cross_checked_on", m.cross_checked_on()}, {"group_rows", group_rows},
                            {"group_row_counts", certificate::group_row_counts_json(certificate::count_group_rows(m.group_rows))},
                            {"ms", m.ms}}.dump(2) << "\n";
  } else {
    std::cout << certificate::format_table(m) << "\n" << certificate::format_counts(m);
    for (const auto& r : m.rows) {
      if (!r.error.empty()) std::cout << "INTERNAL ERROR " << r.source << " -> " << r.target << ": " << r.error << "\n";
      else if (r.not_cross_checked())
        std::cout << "NOT CROSS-CHECKED " << r.source << " -> " << r.target << ": " << r.cross.not_checked << "\n";
      else if (!r.agree())
        std::cout << "DISAGREE " << r.source << " -> " << r.target << " on " << r.cross_check_cache << ": prover "
                  << prove::grade_name(r.small_grade) << " [" << prove::info(r.small_reason).code << "], cross-check "
                  << prove::grade_name(r.cross.grade) << " [" << prove::info(r.cross.reason).code << "]\n";
    }
    std::vector<report::BacklogRow> backlog;
    for (const auto& r : m.rows) backlog.push_back({r.source, r.target, r.grade, r.unblocked_by});
    std::cout << "\n" << report::format_backlog(report::capability_backlog(backlog));
    if (m.group_rows_run) {
      std::cout << "\n" << certificate::format_group_rows(m.group_rows);
      if (certificate::count_group_rows(m.group_rows).errors > 0)
        std::cout << "(a specs directory without the group-row table's families and models: --no-group-rows)\n";
    }
    char line[128];
    std::snprintf(line, sizeof line, "%zu rows in %.1f s\n", m.rows.size(), m.ms / 1000.0);
    std::cout << line;
  }
  bool controls_ok = true;
  if (auto file = args.value("certificate")) {
    certificate::Controls controls = certificate::run_controls(catalog, m, options);
    controls_ok = controls.ok();
    spec::Json cert = certificate::certificate_json(catalog, m, controls, options);
    std::ofstream out(*file);
    if (!out) throw spec::SpecError(*file, "", "a file that cannot be written", "a writable certificate path");
    out << cert.dump(1) << "\n";
    std::cerr << "certificate written to " << *file << "\n" << cert["headline"].get<std::string>() << "\n";
    for (const auto& mu : controls.mutants)
      if (mu.verdict == "survived" || mu.verdict == "disagree" || mu.verdict == "unknown" || mu.verdict == "not-cross-checked")
        std::cerr << "CONTROL " << mu.verdict << ": " << mu.name << " (" << mu.description << "): " << mu.detail << "\n";
    for (const auto& b : controls.broken)
      if (!b.ok) std::cerr << "CONTROL " << b.layout << " not refused as " << b.expected << " (" << b.forward << ", " << b.backward << ")\n";
    for (const auto& s : controls.self_checks)
      if (!s.ok) std::cerr << "CONTROL with " << s.obligation << " off, " << s.source << " -> " << s.target << " is still " << s.grade_off << "\n";
  }
  if (!m.all_agree() || !controls_ok) return kNegative;
  if (m.any_unknown()) return kUnknown;
  return kOk;
}

int run_certificate(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"jobs", true}, {"limit-ms", true}, {"sample", true}});
  // (--no-group-rows is not a flag here: whether the group-row table runs is the certificate's record.)
  if (args.help() || args.positional().empty()) {
    std::cout << R"(usage: kvlayout certificate check FILE [--specs DIR] [--jobs N] [--sample N]

Re-derives every row, group row, count and control of the certificate FILE from the specs (with the cache
shapes the certificate names) and reports any difference: a spec hash, a grade, a reason, an assignment, a
count, a mutant verdict. Then the composition control on the fresh rows (kvlayout graph): A -> B and
B -> C EXACT_BYTE must give A -> C EXACT_BYTE; a violation is a prover bug and fails the check.

  --sample N   re-derive only one in N grid rows (along anti-diagonals: every layout as source and as
               target), group rows and control mutants, and compare those (for
               running under the sanitizers, where a whole replay costs hours); counts, equivalence classes
               and the composition control need the whole grid and are not checked. It never passes a
               certificate a whole replay would fail on the items it compares.

Exit: 0 the certificate is up to date and the control holds; 1 it differs or the control fails; 2 bad input.
)";
    return args.help() ? kOk : kBadInput;
  }
  if (args.positional().size() != 2 || args.positional()[0] != "check")
    throw spec::SpecError("", "", "\"" + args.positional()[0] + "\"", "kvlayout certificate check FILE");
  const std::string file = args.positional()[1];
  spec::Json recorded = spec::read_json_file(file);
  spec::Catalog catalog = catalog_from(args);
  certificate::MatrixOptions options = certificate::options_from_certificate(recorded, file);
  certificate::MatrixOptions flags = matrix_options_from(args);
  options.jobs = flags.jobs;
  options.prove.limit_ms = flags.prove.limit_ms;
  options.progress = flags.progress;
  if (args.has("sample")) {
    const std::int64_t n = parse_integer(*args.value("sample"), "--sample");
    if (n < 1) throw spec::SpecError("", "", "--sample " + std::to_string(n), "a positive integer (1: the whole certificate)");
    options.sample = static_cast<std::size_t>(n);
  }
  const bool sampled = options.sample > 1;
  certificate::Matrix m = certificate::run_matrix(catalog, options);
  certificate::Controls controls = certificate::run_controls(catalog, m, options);
  spec::Json fresh = certificate::certificate_json(catalog, m, controls, options);
  std::vector<std::string> diff = certificate::compare_certificates(recorded, fresh, sampled);
  if (sampled) {
    if (diff.empty()) {
      std::cout << "certificate " << file << ": the sample of 1 in " << options.sample << " agrees: " << fresh["rows"].size()
                << " rows, " << fresh["group_rows"].size() << " group rows and " << fresh["controls"]["mutation"]["mutants"].size()
                << " mutants re-derived and equal to the recorded ones (counts, classes and the composition control need "
                   "a whole replay)\n";
      return kOk;
    }
    std::cout << "certificate " << file << " differs from the specs in " << diff.size() << " place(s) of the sample of 1 in "
              << options.sample << ":\n";
    for (std::size_t i = 0; i < diff.size() && i < 40; ++i) std::cout << "  " << diff[i] << "\n";
    if (diff.size() > 40) std::cout << "  ... and " << diff.size() - 40 << " more\n";
    std::cout << "regenerate it with: kvlayout matrix --certificate " << file << "\n";
    return kNegative;
  }
  // The composition control on the fresh rows: exact moves compose (else the prover is wrong somewhere).
  const report::TranslationGraph graph = report::build_graph(report::view_certificate(fresh, file), nullptr);
  for (const auto& v : report::composition_violations(graph))
    diff.push_back("composition control: " + v.a + " -> " + v.b + " and " + v.b + " -> " + v.c + " are EXACT_BYTE but " + v.a +
                   " -> " + v.c + " is " + v.ac_grade + " (a prover bug)");
  if (diff.empty()) {
    std::cout << "certificate " << file << " is up to date: " << fresh["headline"].get<std::string>() << "\n"
              << "composition control: A -> B -> C EXACT_BYTE gives A -> C EXACT_BYTE on every triple\n";
    return kOk;
  }
  std::cout << "certificate " << file << " differs from the specs in " << diff.size() << " place(s):\n";
  for (std::size_t i = 0; i < diff.size() && i < 40; ++i) std::cout << "  " << diff[i] << "\n";
  if (diff.size() > 40) std::cout << "  ... and " << diff.size() - 40 << " more\n";
  std::cout << "regenerate it with: kvlayout matrix --certificate " << file << "\n";
  return kNegative;
}

}  // namespace kvlayout::cli

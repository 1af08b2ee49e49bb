#include "certificate/certificate.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "spec/sha256.hpp"
#include "certificate/table.hpp"
#include "spec/error.hpp"

#ifndef KVLAYOUT_VERSION
#define KVLAYOUT_VERSION "0"
#endif

extern char** environ;

namespace kvlayout::certificate {
namespace {

using spec::Json;

// The commit the specs are checked out at, from `git -C DIR rev-parse HEAD` run without a shell (the
// directory is user input), or empty when it is not a git checkout.
std::string git_commit(const std::filesystem::path& dir) {
  int out[2];
  if (pipe(out) != 0) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string d = dir.string();
  std::vector<char*> argv = {const_cast<char*>("git"), const_cast<char*>("-C"), d.data(), const_cast<char*>("rev-parse"),
                             const_cast<char*>("HEAD"), nullptr};
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  char buf[128];
  for (ssize_t n; spawned == 0 && (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  if (spawned != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

Json counts_json(const Counts& c) {
  Json grades = Json::object(), reasons = Json::object();
  for (const char* g : {"EXACT_BYTE", "EXACT_TOKEN", "SUBSET", "NOT_EXACT", "REFUSED", "UNKNOWN"}) {
    auto it = c.grades.find(g);
    grades[g] = it == c.grades.end() ? 0 : it->second;
  }
  for (const auto& [k, v] : c.reasons) reasons[k] = v;
  return Json{{"rows", c.rows}, {"grades", grades}, {"reasons", reasons}};
}

std::string key(const Json& row) { return row.value("source", "") + " -> " + row.value("target", ""); }

std::string params_key(const Json& params) {
  std::string out;
  if (!params.is_object()) return out;
  for (auto it = params.begin(); it != params.end(); ++it)
    out += (out.empty() ? "" : ", ") + it.key() + "=" + it.value().dump();
  return out.empty() ? out : " (" + out + ")";
}

// "vllm-flash-nhd-tp (tp_size=1) -> vllm-flash-nhd-tp (tp_size=2) on llama-3.1-70b"
std::string group_key(const Json& row) {
  return row.value("source", "") + params_key(row.value("source_params", Json::object())) + " -> " +
         row.value("target", "") + params_key(row.value("target_params", Json::object())) + " on " + row.value("cache", "");
}

// Per layout: "observed" (conformance/ ran the pinned engine package's own code and the declaration agreed
// with it) or "declared" (read from a cited source only). The claim lives in the declaration; the
// conformance suite is what holds it to account.
Json evidence_json(const Matrix& m) {
  Json out = Json::object();
  for (const auto& L : m.layouts) {
    const std::string kind = spec::evidence_kind(*L);
    if (kind == "observed") {
      out[L->name] = {{"evidence", kind}, {"package", L->observed->package}, {"test", L->observed->test},
                      {"checks", L->observed->checks}};
    } else {
      out[L->name] = {{"evidence", kind}, {"cite", L->cite ? Json(spec::format_citation(*L->cite)) : Json(nullptr)}};
    }
  }
  return out;
}

Json evidence_counts_json(const Matrix& m) {
  std::set<std::string> observed;
  std::size_t declared = 0;
  for (const auto& L : m.layouts) {
    const std::string kind = spec::evidence_kind(*L);
    if (kind == "observed") observed.insert(L->name);
    declared += kind == "declared";
  }
  std::size_t between = 0, one_side = 0;
  for (const auto& r : m.rows) {
    const int sides = static_cast<int>(observed.count(r.source)) + static_cast<int>(observed.count(r.target));
    between += sides == 2;
    one_side += sides == 1;
  }
  return Json{{"observed_layouts", observed.size()}, {"declared_layouts", declared},
              {"rows_between_observed", between}, {"rows_with_one_observed", one_side}};
}

}  // namespace

Json cross_check_json(const std::string& cache, const enumerate::CrossCheck& cross, prove::Grade prover_grade,
                     prove::Reason prover_reason, bool error_free) {
  const bool checked = error_free && cross.checked;
  const bool agree = cross.grade == prover_grade && cross.reason == prover_reason;
  return Json{{"cache", cache},
              {"checked", checked},
              {"not_cross_checked", error_free && !cross.checked ? Json(cross.not_checked) : Json(nullptr)},
              {"grade", checked ? Json(prove::grade_name(cross.grade)) : Json(nullptr)},
              {"reason", checked ? Json(prove::info(cross.reason).code) : Json(nullptr)},
              {"prover_grade", prove::grade_name(prover_grade)},
              {"prover_reason", prove::info(prover_reason).code},
              {"agree", checked ? Json(agree) : Json(nullptr)}};
}

Json cross_check_json(const Row& r) {
  return cross_check_json(r.cross_check_cache, r.cross, r.small_grade, r.small_reason, r.error.empty());
}

Json certificate_json(const spec::Catalog& catalog, const Matrix& m, const Controls& c, const MatrixOptions& options) {
  Json j;
  j["tool"] = {{"name", "kvlayout"}, {"version", KVLAYOUT_VERSION}};
  std::string commit = git_commit(catalog.root());
  j["commit"] = commit.empty() ? Json(nullptr) : Json(commit);
  Json proofs = options.cache ? Json{{"all", *options.cache}}
                              : Json{{"kv-heads", options.kv_cache}, {"mla-latent and mixed pairs", options.mla_cache}};
  Json shapes = Json::object();
  for (const auto& [name, shape] : m.caches) shapes[name] = shape.params;
  // Shapes derived for a pair (enumerate/derive_shape.hpp) are in `shapes` like the others, and named here.
  std::set<std::string> derived;
  for (const auto& r : m.rows)
    if (r.cross_check_cache != options.cross_check_cache) derived.insert(r.cross_check_cache);
  for (const auto& r : m.group_rows)
    if (r.cross_check_cache != options.cross_check_cache) derived.insert(r.cross_check_cache);
  j["caches"] = {{"proofs", proofs}, {"cross_check", options.cross_check_cache}, {"cross_check_derived", derived},
                 {"shapes", shapes}};

  Json hashes = Json::object();
  std::vector<std::filesystem::path> files = catalog.layout_files();
  for (const auto& f : catalog.cache_files()) files.push_back(f);
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    hashes[(std::filesystem::path("specs") / std::filesystem::relative(f, catalog.root())).generic_string()] = spec::sha256_file(f.string());
  j["spec_hashes"] = hashes;

  std::int64_t positions = 0;
  for (const auto& r : m.rows) positions += r.cross.positions_checked;
  Json counts = counts_json(count_rows(m));
  Json classes = counts_json(count_classes(m));
  classes["classes"] = m.classes.size();
  counts["distinct_classes"] = classes;
  counts["layouts"] = m.layouts.size();
  counts["positions_checked"] = positions;
  counts["cross_checked_on"] = m.cross_checked_on();
  counts["not_cross_checked"] = m.not_cross_checked();
  counts["disagree"] = m.disagreements();
  counts["unknown"] = m.unknowns();
  counts["internal_errors"] = m.errors();
  counts["group_rows"] = group_row_counts_json(count_group_rows(m.group_rows));
  counts["evidence"] = evidence_counts_json(m);
  j["counts"] = counts;
  j["evidence"] = evidence_json(m);
  j["equivalence_classes"] = m.classes;

  Json rows = Json::array();
  for (const auto& r : m.rows) {
    if (!r.derived) continue;
    rows.push_back({{"source", r.source},
                    {"target", r.target},
                    {"group", r.group},
                    {"cache", r.cache},
                    {"grade", prove::grade_name(r.grade)},
                    {"reason", prove::info(r.reason).code},
                    {"unblocked_by", r.unblocked_by.empty() ? Json(nullptr) : Json(r.unblocked_by)},
                    {"prove_ms", std::round(r.prove_ms * 10) / 10},
                    {"positions_checked", r.cross.positions_checked},
                    {"counterexample", r.counterexample},
                    {"cross_check", cross_check_json(r)},
                    {"error", r.error.empty() ? Json(nullptr) : Json(r.error)}});
  }
  j["rows"] = rows;
  j["group_rows_table"] = m.group_rows_run;
  Json group_rows = Json::array();
  for (const auto& r : m.group_rows) group_rows.push_back(group_row_json(r));
  j["group_rows"] = group_rows;

  Json mutants = Json::array();
  std::map<std::string, std::map<std::string, std::size_t>> by_kind;
  for (const auto& mu : c.mutants) {
    ++by_kind[mu.kind][mu.verdict];
    mutants.push_back({{"original", mu.original}, {"mutant", mu.name}, {"kind", mu.kind}, {"edit", mu.description},
                       {"verdict", mu.verdict}, {"grade", mu.grade.empty() ? Json(nullptr) : Json(mu.grade)},
                       {"reason", mu.reason.empty() ? Json(nullptr) : Json(mu.reason)},
                       {"caught_by", mu.caught_by.empty() ? Json(nullptr) : Json(mu.caught_by)}, {"detail", mu.detail}});
  }
  Json broken = Json::array();
  for (const auto& b : c.broken)
    broken.push_back({{"layout", b.layout}, {"expected_reason", b.expected}, {"cache", b.cache}, {"as_target", b.forward},
                      {"as_source", b.backward}, {"ok", b.ok}});
  Json self = Json::array();
  for (const auto& s : c.self_checks)
    self.push_back({{"obligation", s.obligation}, {"source", s.source}, {"target", s.target}, {"cache", s.cache},
                    {"grade_with_obligation", s.grade_on}, {"grade_without_obligation", s.grade_off}, {"ok", s.ok}});
  std::size_t survivors = c.verdicts.count("survived") ? c.verdicts.at("survived") : 0;
  j["controls"] = {
      {"ok", c.ok()},
      {"mutation_score", c.mutation_score},
      {"mutation", {{"rule", "each mutant of an engine declaration is graded against its original on the cross-check "
                             "shape and compared with it by enumeration; a mutant that places any position differently "
                             "must be caught, by a non-exact grade or by a refuted proof that the two have the same address "
                             "function; a mutant that places every position alike must be proven the same; and the "
                             "enumeration's grade must equal the prover's on every mutant pair. Ownership mutants of a "
                             "rank family (its holds only: modulo-owner, owner-off-by-one) are judged by group moves on "
                             "the cross-check shape (the whole, the family at size 1, to the family at sizes 2 and 8 and "
                             "back): killed when a grade differs from the original family's, and the group enumeration "
                             "must agree with the group proof on every mutant move"},
                    {"verdicts", c.verdicts},
                    {"killed_by_grade", c.killed_by_grade},
                    {"survivors", survivors},
                    {"by_kind", by_kind},
                    {"mutants", mutants}}},
      {"broken", broken},
      {"self_checks", self},
      {"fictional", {{"layout", "fictional-engine-9000"}, {"rows", c.fictional_grades}, {"statement", c.fictional_statement}}}};
  j["headline"] = headline(j);
  return j;
}

std::string headline(const Json& cert) {
  const Json& counts = cert["counts"];
  const Json& g = counts["grades"];
  const Json& cg = counts["distinct_classes"]["grades"];
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "%d ordered pairs of %d declared layouts (%d rows between %d distinct layouts after merging proven "
                "duplicates): %d EXACT_BYTE, %d EXACT_TOKEN, %d SUBSET, %d NOT_EXACT, %d REFUSED, %d UNKNOWN "
                "(distinct: %d / %d / %d / %d / %d / %d); ",
                counts["rows"].get<int>(), counts["layouts"].get<int>(), counts["distinct_classes"]["rows"].get<int>(),
                counts["distinct_classes"]["classes"].get<int>(), g["EXACT_BYTE"].get<int>(), g["EXACT_TOKEN"].get<int>(),
                g["SUBSET"].get<int>(), g["NOT_EXACT"].get<int>(), g["REFUSED"].get<int>(), g["UNKNOWN"].get<int>(),
                cg["EXACT_BYTE"].get<int>(), cg["EXACT_TOKEN"].get<int>(), cg["SUBSET"].get<int>(), cg["NOT_EXACT"].get<int>(),
                cg["REFUSED"].get<int>(), cg["UNKNOWN"].get<int>());
  std::string out = buf;
  // Cross-check coverage, said as it is: "every row" only when no row went unchecked, with each shape used.
  const int rows = counts["rows"].get<int>(), unchecked = counts["not_cross_checked"].get<int>();
  int checked = 0;
  std::string shapes;
  for (auto it = counts["cross_checked_on"].begin(); it != counts["cross_checked_on"].end(); ++it) {
    checked += it.value().get<int>();
    shapes += (shapes.empty() ? "" : ", ") + std::to_string(it.value().get<int>()) + " on " + it.key();
  }
  out += (unchecked == 0 && checked == rows ? std::string("every row") : std::to_string(checked) + " of " + std::to_string(rows) + " rows") +
         " cross-checked by enumeration (" + (shapes.empty() ? std::string("none") : shapes) + "), " +
         std::to_string(unchecked) + " not cross-checked";
  std::snprintf(buf, sizeof buf, " (%d DISAGREE, %lld positions checked); ", counts["disagree"].get<int>(),
                static_cast<long long>(counts["positions_checked"].get<std::int64_t>()));
  out += buf;
  // The group rows, when the table ran: their grades and cross-check coverage, said the same way.
  const Json gr = counts.value("group_rows", Json::object());
  if (gr.value("rows", 0) > 0) {
    const Json& gg = gr["grades"];
    int gchecked = 0;
    for (auto it = gr["cross_checked_on"].begin(); it != gr["cross_checked_on"].end(); ++it) gchecked += it.value().get<int>();
    std::snprintf(buf, sizeof buf,
                  "%d group rows (rank families moved between group sizes): %d EXACT_BYTE, %d EXACT_TOKEN, %d SUBSET, "
                  "%d NOT_EXACT, %d REFUSED, %d UNKNOWN, %d internal errors; %d cross-checked by enumerating both groups, "
                  "%d not cross-checked (%d DISAGREE); ",
                  gr["rows"].get<int>(), gg["EXACT_BYTE"].get<int>(), gg["EXACT_TOKEN"].get<int>(), gg["SUBSET"].get<int>(),
                  gg["NOT_EXACT"].get<int>(), gg["REFUSED"].get<int>(), gg["UNKNOWN"].get<int>(),
                  gr["internal_errors"].get<int>(), gchecked, gr["not_cross_checked"].get<int>(), gr["disagree"].get<int>());
    out += buf;
  }
  // Evidence: how many layouts an engine's own code produced, and how many rows are between two of them.
  if (counts.contains("evidence")) {
    const Json& e = counts["evidence"];
    std::snprintf(buf, sizeof buf,
                  "evidence: %d layouts observed (the engine's own code ran in conformance/ and agreed), %d declared "
                  "from source only; %d rows between observed layouts; ",
                  e["observed_layouts"].get<int>(), e["declared_layouts"].get<int>(), e["rows_between_observed"].get<int>());
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "controls: mutation score %.3f over %d mutants, all controls %s.",
                cert["controls"]["mutation_score"].get<double>(),
                static_cast<int>(cert["controls"]["mutation"]["mutants"].size()),
                cert["controls"]["ok"].get<bool>() ? "failed as they must" : "DID NOT all fail as they must");
  return out + buf;
}

MatrixOptions options_from_certificate(const Json& cert, const std::string& file) {
  MatrixOptions o;
  try {
    const Json& proofs = cert.at("caches").at("proofs");
    if (proofs.contains("all")) o.cache = proofs.at("all").get<std::string>();
    else {
      o.kv_cache = proofs.at("kv-heads").get<std::string>();
      o.mla_cache = proofs.at("mla-latent and mixed pairs").get<std::string>();
    }
    o.cross_check_cache = cert.at("caches").at("cross_check").get<std::string>();
    // A certificate from before the group-row table re-derives with it (and so differs).
    o.group_rows = cert.value("group_rows_table", true);
  } catch (const Json::exception& e) {
    throw spec::SpecError(file, "/caches", std::string("no usable cache shapes (") + e.what() + ")",
                          "a certificate written by kvlayout matrix --certificate");
  }
  return o;
}

std::vector<std::string> compare_certificates(const Json& recorded, const Json& fresh, bool sampled) {
  std::vector<std::string> diff;
  auto note = [&](const std::string& s) { diff.push_back(s); };
  // Spec files: added, removed, changed.
  const Json rh = recorded.value("spec_hashes", Json::object());
  const Json& fh = fresh["spec_hashes"];
  for (auto it = fh.begin(); it != fh.end(); ++it) {
    if (!rh.contains(it.key())) note("spec " + it.key() + " is not in the certificate");
    else if (rh[it.key()] != it.value()) note("spec " + it.key() + " changed (sha256 " + rh[it.key()].get<std::string>().substr(0, 12) + "... -> " + it.value().get<std::string>().substr(0, 12) + "...)");
  }
  for (auto it = rh.begin(); it != rh.end(); ++it)
    if (!fh.contains(it.key())) note("spec " + it.key() + " is in the certificate but no longer exists");
  // (A sample derives shapes for the pairs it holds only: its configured shapes are what it can compare.)
  const Json rcaches = recorded.value("caches", Json::object());
  if (sampled ? rcaches.value("proofs", Json()) != fresh["caches"]["proofs"] || rcaches.value("cross_check", Json()) != fresh["caches"]["cross_check"]
              : rcaches != fresh["caches"])
    note("cache shapes differ");
  // A sample re-derives some items: the whole-grid facts (counts, classes, evidence totals) are not its to judge,
  // and an item it left out is not missing.
  if (!sampled && recorded.value("counts", Json()) != fresh["counts"]) note("counts differ: recorded " + recorded.value("counts", Json()).dump() + ", now " + fresh["counts"].dump());
  if (!sampled && recorded.value("equivalence_classes", Json()) != fresh["equivalence_classes"]) note("equivalence classes differ");
  if (recorded.value("evidence", Json()) != fresh["evidence"]) note("evidence (observed / declared) differs");
  // Rows, by pair.
  const Json recorded_rows = recorded.value("rows", Json::array());
  std::map<std::string, const Json*> rec;
  for (const auto& r : recorded_rows) rec[key(r)] = &r;
  std::set<std::string> seen;
  for (const auto& r : fresh["rows"]) {
    seen.insert(key(r));
    auto it = rec.find(key(r));
    if (it == rec.end()) {
      note("row " + key(r) + " is not in the certificate");
      continue;
    }
    const Json& o = *it->second;
    for (const char* field : {"cache", "grade", "reason", "unblocked_by", "positions_checked"})
      if (o.value(field, Json()) != r[field]) note("row " + key(r) + ": " + field + " " + o.value(field, Json()).dump() + " -> " + r[field].dump());
    // The cross-check: where it ran, whether it ran (and why not), what it found, and whether it agreed.
    const Json oc = o.value("cross_check", Json::object());
    for (const char* field : {"cache", "checked", "not_cross_checked", "grade", "reason", "agree"})
      if (oc.value(field, Json()) != r["cross_check"][field])
        note("row " + key(r) + ": cross-check " + field + " " + oc.value(field, Json()).dump() + " -> " +
             r["cross_check"][field].dump());
  }
  if (!sampled)
    for (const auto& [k, r] : rec)
      if (!seen.count(k)) note("row " + k + " is in the certificate but no longer derived");
  // Group rows, by move and shape.
  if (recorded.value("group_rows_table", true) != fresh["group_rows_table"]) note("group-row table run differs");
  std::map<std::string, const Json*> rec_groups;
  const Json recorded_groups = recorded.value("group_rows", Json::array());
  for (const auto& r : recorded_groups) rec_groups[group_key(r)] = &r;
  std::set<std::string> seen_groups;
  for (const auto& r : fresh["group_rows"]) {
    const std::string k = group_key(r);
    seen_groups.insert(k);
    auto it = rec_groups.find(k);
    if (it == rec_groups.end()) {
      note("group row " + k + " is not in the certificate");
      continue;
    }
    const Json& o = *it->second;
    for (const char* field : {"grade", "reason", "unblocked_by", "assignment", "positions_checked", "error"})
      if (o.value(field, Json()) != r[field]) note("group row " + k + ": " + field + " " + o.value(field, Json()).dump() + " -> " + r[field].dump());
    const Json oc = o.value("cross_check", Json::object());
    for (const char* field : {"cache", "checked", "not_cross_checked", "grade", "reason", "prover_grade", "prover_reason", "agree"})
      if (oc.value(field, Json()) != r["cross_check"][field])
        note("group row " + k + ": cross-check " + field + " " + oc.value(field, Json()).dump() + " -> " +
             r["cross_check"][field].dump());
  }
  if (!sampled)
    for (const auto& [k, r] : rec_groups)
      if (!seen_groups.count(k)) note("group row " + k + " is in the certificate but no longer derived");
  // Controls: everything but free-text details.
  const Json rc = recorded.value("controls", Json::object());
  const Json& fc = fresh["controls"];
  for (const char* field : {"ok", "mutation_score", "broken", "self_checks"})
    if ((!sampled || std::string(field) == "broken" || std::string(field) == "self_checks") && rc.value(field, Json()) != fc[field])
      note(std::string("controls: ") + field + " differ");
  if (!sampled && rc.value("mutation", Json::object()).value("verdicts", Json()) != fc["mutation"]["verdicts"])
    note("controls: mutant verdicts differ");
  std::map<std::string, std::string> verdicts;
  for (const auto& mu : rc.value("mutation", Json::object()).value("mutants", Json::array()))
    verdicts[mu.value("mutant", "")] = mu.value("verdict", "") + " " + mu.value("grade", Json()).dump();
  for (const auto& mu : fc["mutation"]["mutants"]) {
    std::string now = mu["verdict"].get<std::string>() + " " + mu["grade"].dump();
    auto it = verdicts.find(mu["mutant"].get<std::string>());
    if (it == verdicts.end()) note("mutant " + mu["mutant"].get<std::string>() + " is not in the certificate");
    else if (it->second != now) note("mutant " + it->first + ": " + it->second + " -> " + now);
  }
  return diff;
}

}  // namespace kvlayout::certificate

#include "certificate/matrix.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <stdexcept>

#include "certificate/cross_check_plan.hpp"
#include "certificate/equivalence_classes.hpp"
#include "certificate/parallel.hpp"
#include "prove/proof.hpp"
#include "prove/report.hpp"
#include "prove/side_cache.hpp"

namespace kvlayout::certificate {

std::size_t Matrix::disagreements() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return !r.agree(); }));
}
std::size_t Matrix::unknowns() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const Row& r) {
    return r.error.empty() && (r.grade == prove::Grade::Unknown || r.small_grade == prove::Grade::Unknown);
  }));
}
std::size_t Matrix::errors() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return !r.error.empty(); }));
}
std::size_t Matrix::not_cross_checked() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.not_cross_checked(); }));
}
std::map<std::string, std::size_t> Matrix::cross_checked_on() const {
  std::map<std::string, std::size_t> out;
  for (const auto& r : rows)
    if (r.cross_checked()) ++out[r.cross_check_cache];
  return out;
}

std::string proof_cache(const spec::Layout& source, const spec::Layout& target, const MatrixOptions& options) {
  if (options.cache) return *options.cache;
  bool kv = source.content.name == "kv-heads" && target.content.name == "kv-heads";
  return kv ? options.kv_cache : options.mla_cache;
}

namespace {

spec::Json deciding_counterexample(const prove::Proof& p) {
  const prove::ObligationResult* d = p.deciding();
  if (!d || prove::is_exact(p.grade)) return nullptr;
  spec::Json all = prove::to_json(p);
  for (const auto& o : all["obligations"])
    if (o["name"] == d->name && o["side"] == prove::side_name(d->side)) {
      spec::Json c = o["counterexample"];
      if (c.is_null()) c = spec::Json{{"summary", d->detail}};
      c["obligation"] = d->name + "(" + prove::side_name(d->side) + ")";
      return c;
    }
  return nullptr;
}

}  // namespace

Matrix run_matrix(const spec::Catalog& catalog, const MatrixOptions& options) {
  auto start = std::chrono::steady_clock::now();
  Matrix m;
  m.layouts = spec::load_layouts(catalog);
  m.cross_check_cache = options.cross_check_cache;
  auto load_cache = [&](const std::string& name) {
    if (!m.caches.count(name)) m.caches.emplace(name, spec::load_cache(catalog.find_cache(name).string()));
  };
  load_cache(options.cross_check_cache);
  const std::size_t n = m.layouts.size();
  for (std::size_t s = 0; s < n; ++s)
    for (std::size_t t = 0; t < n; ++t) load_cache(proof_cache(*m.layouts[s], *m.layouts[t], options));
  const spec::CacheShape& small = m.caches.at(options.cross_check_cache);

  prove::ProveOptions prove_options = options.prove;
  if (!prove_options.side_cache) prove_options.side_cache = std::make_shared<prove::SideCache>();

  // Each layout enumerated once per cross-check shape, shared by all its pairs there.
  const CrossCheckPlan plan = plan_cross_checks(
      m.layouts, small, [&](std::size_t s, std::size_t t) -> const spec::CacheShape& {
        return m.caches.at(proof_cache(*m.layouts[s], *m.layouts[t], options));
      },
      options.jobs);
  for (const auto& [name, shape] : plan.derived) m.caches.emplace(name, shape);

  m.rows.resize(n * n);
  parallel_for(
      n * n, options.jobs,
      [&](std::size_t i) {
        const auto& S = m.layouts[i / n];
        const auto& T = m.layouts[i % n];
        Row& row = m.rows[i];
        row.source = S->name;
        row.target = T->name;
        row.cache = proof_cache(*S, *T, options);
        row.cross_check_cache = plan.shape[i].empty() ? small.name : plan.shape[i];
        // What the row was doing when kvlayout itself failed, for the row's error.
        std::string stage = "prove on " + row.cache;
        try {
          prove::Proof p = prove::prove(S, T, m.caches.at(row.cache), prove_options);
          row.grade = p.grade;
          row.reason = p.reason;
          row.unblocked_by = p.unblocked_by;
          row.prove_ms = p.ms;
          row.counterexample = deciding_counterexample(p);
          stage = "prove on " + row.cross_check_cache;
          prove::Proof q = prove::prove(S, T, m.caches.at(row.cross_check_cache), prove_options);
          row.small_grade = q.grade;
          row.small_reason = q.reason;
          if (options.small_grade_override)
            if (auto g = options.small_grade_override(S->name, T->name)) row.small_grade = *g;
          stage = "cross-check on " + row.cross_check_cache;
          if (plan.shape[i].empty()) row.cross.not_checked = plan.why_not[i];
          else row.cross = enumerate::cross_check(plan.at(plan.shape[i], i / n), plan.at(plan.shape[i], i % n));
        } catch (const std::logic_error& e) {
          // prove::InternalError, enumerate::OracleError, and the bare std::logic_error of prove/model.cpp
          // (a solver model the tables contradict) or of the standard library (a vector over max_size).
          // Bad input (spec::SpecError, a runtime_error) is not caught: it is the run's, exit 2.
          row.error = stage + ": " + e.what();
        } catch (const std::bad_alloc&) {
          row.error = stage + ": out of memory";
        }
      },
      options.progress);

  m.classes = equivalence_classes(
      m.layouts,
      [&](std::size_t a, std::size_t b) {
        return std::vector<std::string>{proof_cache(*m.layouts[a], *m.layouts[b], options), options.cross_check_cache};
      },
      m.caches, options.prove);
  m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace kvlayout::certificate

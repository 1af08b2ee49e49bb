#include "certificate/matrix.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "certificate/equivalence_classes.hpp"
#include "certificate/parallel.hpp"
#include "prove/internal_error.hpp"
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

  // Each layout enumerated once on the small shape, shared by all its pairs.
  std::vector<enumerate::Enumerated> enumerated(n);
  parallel_for(n, options.jobs, [&](std::size_t i) { enumerated[i] = enumerate::enumerate_layout(m.layouts[i], small); });

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
        try {
          prove::Proof p = prove::prove(S, T, m.caches.at(row.cache), prove_options);
          row.grade = p.grade;
          row.reason = p.reason;
          row.unblocked_by = p.unblocked_by;
          row.prove_ms = p.ms;
          row.counterexample = deciding_counterexample(p);
          prove::Proof q = prove::prove(S, T, small, prove_options);
          row.small_grade = q.grade;
          row.small_reason = q.reason;
          if (options.small_grade_override)
            if (auto g = options.small_grade_override(S->name, T->name)) row.small_grade = *g;
          row.cross = enumerate::cross_check(enumerated[i / n], enumerated[i % n]);
        } catch (const prove::InternalError& e) {
          row.error = e.what();
        } catch (const enumerate::OracleError& e) {
          row.error = std::string("cross-check: ") + e.what();
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

#include "certificate/matrix.hpp"

#include <algorithm>
#include <chrono>
#include <new>
#include <set>
#include <stdexcept>

#include "certificate/cross_check_plan.hpp"
#include "certificate/deciding_counterexample.hpp"
#include "certificate/equivalence_classes.hpp"
#include "certificate/parallel.hpp"
#include "enumerate/group_cross_check.hpp"
#include "layout/rank_group.hpp"
#include "prove/group.hpp"
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
      [&](std::size_t i) { return in_sample_pair(i / n, i % n, options.sample); }, options.jobs);
  for (const auto& [name, shape] : plan.derived) m.caches.emplace(name, shape);

  // Rows with a rank family on a side are group translations: each family's group on each cross-check
  // shape its rows use, enumerated once, shared by those rows (a plain layout there is a group of one,
  // its enumeration the plan's).
  std::vector<bool> family(n);
  for (std::size_t s = 0; s < n; ++s) family[s] = spec::is_family(*m.layouts[s]);
  std::set<std::pair<std::string, std::size_t>> wanted;
  for (std::size_t i = 0; i < n * n; ++i)
    if (!plan.shape[i].empty())
      for (std::size_t side : {i / n, i % n})
        if (family[side]) wanted.insert({plan.shape[i], side});
  const std::vector<std::pair<std::string, std::size_t>> group_work(wanted.begin(), wanted.end());
  std::vector<enumerate::EnumeratedGroup> enumerated_groups(group_work.size());
  parallel_for(group_work.size(), options.jobs, [&](std::size_t k) {
    const spec::CacheShape& shape = m.caches.at(group_work[k].first);
    enumerated_groups[k] = enumerate::enumerate_group(layout::expand_group(m.layouts[group_work[k].second], shape, {}), shape);
  }, phase_progress(options.progress, "enumerating rank families"));
  std::map<std::pair<std::string, std::size_t>, const enumerate::EnumeratedGroup*> groups;
  for (std::size_t k = 0; k < group_work.size(); ++k) groups[group_work[k]] = &enumerated_groups[k];

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
        row.group = family[i / n] || family[i % n];
        row.cross_check_cache = plan.shape[i].empty() ? small.name : plan.shape[i];
        if (!in_sample_pair(i / n, i % n, options.sample)) {
          row.derived = false;
          return;
        }
        // What the row was doing when kvlayout itself failed, for the row's error.
        std::string stage = "prove on " + row.cache;
        try {
          if (row.group) {
            const spec::CacheShape& cache = m.caches.at(row.cache);
            prove::GroupProof g = prove::prove_group(layout::expand_group(S, cache, {}), layout::expand_group(T, cache, {}),
                                                     cache, prove_options);
            row.grade = g.proof.grade;
            row.reason = g.proof.reason;
            row.unblocked_by = g.proof.unblocked_by;
            row.prove_ms = g.proof.ms;
            row.counterexample = deciding_counterexample(g.proof);
            stage = "prove on " + row.cross_check_cache;
            const spec::CacheShape& on = m.caches.at(row.cross_check_cache);
            layout::Group SS = layout::expand_group(S, on, {}), TT = layout::expand_group(T, on, {});
            prove::GroupProof q = prove::prove_group(SS, TT, on, prove_options);
            row.small_grade = q.proof.grade;
            row.small_reason = q.proof.reason;
          } else {
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
          }
          if (options.small_grade_override)
            if (auto g = options.small_grade_override(S->name, T->name)) row.small_grade = *g;
          stage = "cross-check on " + row.cross_check_cache;
          if (plan.shape[i].empty()) {
            row.cross.not_checked = plan.why_not[i];
          } else if (row.group) {
            // Each side as a group on the row's shape: a family's members, or the plain layout alone.
            auto side = [&](std::size_t l) -> std::pair<layout::Group, std::vector<const enumerate::Enumerated*>> {
              if (family[l]) {
                const enumerate::EnumeratedGroup& g = *groups.at({plan.shape[i], l});
                std::vector<const enumerate::Enumerated*> members;
                for (const auto& e : g.members) members.push_back(&e);
                return {g.group, members};
              }
              return {layout::expand_group(m.layouts[l], m.caches.at(plan.shape[i]), {}), {&plan.at(plan.shape[i], l)}};
            };
            auto source = side(i / n), target = side(i % n);
            row.cross = enumerate::cross_check_group(source.first, source.second, target.first, target.second);
          } else {
            row.cross = enumerate::cross_check(plan.at(plan.shape[i], i / n), plan.at(plan.shape[i], i % n));
          }
        } catch (const std::logic_error& e) {
          // prove::InternalError, enumerate::OracleError, and the bare std::logic_error of prove/model.cpp
          // (a solver model the tables contradict) or of the standard library (a vector over max_size).
          // Bad input (spec::SpecError, a runtime_error) is not caught: it is the run's, exit 2.
          row.error = stage + ": " + e.what();
        } catch (const std::bad_alloc&) {
          row.error = stage + ": out of memory";
        }
      },
      phase_progress(options.progress, "matrix rows"));

  if (options.group_rows) {
    std::vector<GroupRowSpec> table;
    for (std::size_t i = 0; i < group_row_table().size(); ++i)
      if (in_sample(i, options.sample)) table.push_back(group_row_table()[i]);
    GroupRows g = run_group_rows(catalog, m.layouts, table, small, prove_options, options.jobs);
    m.group_rows = std::move(g.rows);
    for (auto& [name, shape] : g.caches) m.caches.emplace(name, std::move(shape));
    m.group_rows_run = true;
  }

  // Classes are a fact about the whole grid: a sample has none.
  if (options.sample == 1) m.classes = equivalence_classes(
      m.layouts,
      [&](std::size_t a, std::size_t b) {
        return std::vector<std::string>{proof_cache(*m.layouts[a], *m.layouts[b], options), options.cross_check_cache};
      },
      m.caches, options.prove);
  m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace kvlayout::certificate

#include "certificate/cross_check_plan.hpp"

#include <set>

#include "certificate/parallel.hpp"
#include "enumerate/derive_shape.hpp"

namespace kvlayout::certificate {

CrossCheckPlan plan_cross_checks(const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
                                 const spec::CacheShape& small,
                                 const std::function<const spec::CacheShape&(std::size_t, std::size_t)>& proof_shape,
                                 const std::function<bool(std::size_t row)>& row_wanted, int jobs) {
  CrossCheckPlan plan;
  const std::size_t n = layouts.size();
  std::vector<enumerate::Enumerated> on_small(n);
  parallel_for(n, jobs, [&](std::size_t i) { on_small[i] = enumerate::enumerate_layout(layouts[i], small); });
  for (std::size_t i = 0; i < n; ++i) plan.enumerated.emplace(std::make_pair(small.name, i), std::move(on_small[i]));

  // Shapes first (binding only, cheap, in row order so the result does not depend on --jobs) ...
  plan.shape.resize(n * n);
  plan.why_not.resize(n * n);
  std::set<std::pair<std::string, std::size_t>> wanted;
  for (std::size_t i = 0; i < n * n; ++i) {
    if (!row_wanted(i)) continue;
    const std::size_t s = i / n, t = i % n;
    if (plan.at(small.name, s).bound->fits() && plan.at(small.name, t).bound->fits()) {
      plan.shape[i] = small.name;
      continue;
    }
    enumerate::ShapeChoice c = enumerate::cross_check_shape(layouts[s], layouts[t], small, proof_shape(s, t));
    if (!c.shape) {
      plan.why_not[i] = c.why_not;
      continue;
    }
    plan.shape[i] = c.shape->name;
    plan.derived.emplace(c.shape->name, *c.shape);
    wanted.insert({c.shape->name, s});
    wanted.insert({c.shape->name, t});
  }
  // ... then every layout on every derived shape it needs, in parallel.
  std::vector<std::pair<std::string, std::size_t>> work(wanted.begin(), wanted.end());
  std::vector<enumerate::Enumerated> done(work.size());
  parallel_for(work.size(), jobs, [&](std::size_t k) {
    done[k] = enumerate::enumerate_layout(layouts[work[k].second], plan.derived.at(work[k].first));
  });
  for (std::size_t k = 0; k < work.size(); ++k) plan.enumerated.emplace(work[k], std::move(done[k]));
  return plan;
}

}  // namespace kvlayout::certificate

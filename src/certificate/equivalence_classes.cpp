#include "certificate/equivalence_classes.hpp"

#include <numeric>

#include "layout/bound_layout.hpp"
#include "prove/equivalence.hpp"

namespace kvlayout::certificate {

std::vector<std::vector<std::string>> equivalence_classes(
    const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
    const std::function<std::vector<std::string>(std::size_t, std::size_t)>& caches_for_pair,
    const std::map<std::string, spec::CacheShape>& caches, const prove::ProveOptions& options) {
  const std::size_t n = layouts.size();
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<std::size_t(std::size_t)> root = [&](std::size_t i) { return parent[i] == i ? i : parent[i] = root(parent[i]); };
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (root(a) == root(b) || layouts[a]->content.name != layouts[b]->content.name) continue;
      // A rank family is a group of layouts, not one address function: never merged.
      if (spec::is_family(*layouts[a]) || spec::is_family(*layouts[b])) continue;
      bool same = true;
      for (const std::string& name : caches_for_pair(a, b)) {
        const spec::CacheShape& cache = caches.at(name);
        layout::BoundLayout ba = layout::bind(layouts[a], cache), bb = layout::bind(layouts[b], cache);
        same = ba.fits() && bb.fits() && prove::same_address_function(ba, bb, options).status == prove::Status::Proved;
        if (!same) break;
      }
      if (same) parent[root(b)] = root(a);
    }
  }
  std::vector<std::vector<std::string>> classes;
  std::vector<int> index(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = root(i);
    if (index[r] < 0) {
      index[r] = static_cast<int>(classes.size());
      classes.emplace_back();
    }
    classes[static_cast<std::size_t>(index[r])].push_back(layouts[i]->name);
  }
  return classes;
}

}  // namespace kvlayout::certificate

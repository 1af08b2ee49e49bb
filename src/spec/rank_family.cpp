// Rank families in the declaration: which layouts are families, and an instance's declaration (the family
// with parameters bound to literals). Expanding a family over its rank values needs the sizes, which may
// depend on the cache shape: that is layout/rank_group.
#include <algorithm>

#include "spec/error.hpp"
#include "spec/layout.hpp"

namespace kvlayout::spec {

bool is_family(const Layout& layout) { return !layout.ranks.empty(); }

std::shared_ptr<const Layout> with_params(const Layout& layout, const std::map<std::string, std::int64_t>& values,
                                          const std::string& name) {
  auto out = std::make_shared<Layout>(layout);
  out->name = name;
  for (const auto& [name_bound, value] : values) {
    const std::string& param = name_bound;  // clang 14 cannot capture a structured binding in a lambda
    auto it = std::find_if(out->params.begin(), out->params.end(), [&](const Parameter& p) { return p.name == param; });
    if (it == out->params.end()) {
      std::string names;
      for (const auto& p : layout.params) names += (names.empty() ? "" : ", ") + p.name;
      throw SpecError(layout.file, "/params", "no parameter \"" + param + "\" in " + layout.name,
                      "one of its parameters (" + (names.empty() ? "it declares none" : names) + ")");
    }
    it->value = SourceExpr{expr::literal(value), it->value.path, std::to_string(value)};
  }
  out->ranks.erase(std::remove_if(out->ranks.begin(), out->ranks.end(),
                                  [&](const RankAxis& a) { return values.count(a.rank) > 0; }),
                   out->ranks.end());
  return out;
}

}  // namespace kvlayout::spec

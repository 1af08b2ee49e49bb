#include "enumerate/derive_shape.hpp"

#include <algorithm>

#include "enumerate/limits.hpp"
#include "layout/bound_layout.hpp"
#include "spec/error.hpp"
#include "spec/name_check.hpp"

namespace kvlayout::enumerate {
namespace {

bool is_cache_parameter(const std::string& name) {
  const auto& known = spec::cache_parameter_names();
  return std::find(known.begin(), known.end(), name) != known.end();
}

void add_unique(std::vector<std::string>& out, const std::string& name) {
  if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
}

// The cache-shape parameters an expression reads, directly or through the layout's own parameters
// (`num_blocks` reads num_tokens); load_layout has checked that the parameters are acyclic.
void add_read(const spec::Layout& layout, const expr::Expr& e, std::vector<std::string>& out) {
  for (const auto& name : spec::referenced_names(e)) {
    if (is_cache_parameter(name)) {
      add_unique(out, name);
      continue;
    }
    for (const auto& p : layout.params)
      if (p.name == name) add_read(layout, p.value.expr, out);
  }
}

// What to vary so that a layout that does not fit might: what its failed requirements read, and, for a
// misfit that is no requirement (the shape lacks a parameter the layout reads), the parameters it lacks.
void add_varied(const layout::BoundLayout& bound, std::vector<std::string>& out) {
  for (const auto& misfit : bound.misfits) {
    bool requirement = false;
    for (const auto& r : bound.layout->requirements)
      if (!misfit.path.empty() && r.path == misfit.path) {
        add_read(*bound.layout, r.expr, out);
        requirement = true;
      }
    if (requirement) continue;
    for (const auto& name : spec::cache_parameter_names())
      if (!bound.cache.params.count(name)) add_unique(out, name);
  }
}

bool fits_within_limits(const std::shared_ptr<const spec::Layout>& layout, const spec::CacheShape& shape) {
  try {
    layout::BoundLayout b = layout::bind(layout, shape);
    return b.fits() && !too_large(b);
  } catch (const spec::SpecError&) {
    return false;  // a candidate the declaration cannot be bound with (a zero extent, an overflow)
  }
}

std::string list(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::int64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return "{" + out + "}";
}

}  // namespace

std::vector<std::int64_t> candidate_values(const std::string& param, const spec::CacheShape& small,
                                           const spec::CacheShape& proof) {
  std::vector<std::int64_t> out;
  auto add = [&](std::int64_t v) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  if (auto v = proof.get(param)) add(*v);
  if (auto v = small.get(param)) add(*v);
  for (std::int64_t v = 1; v <= 4096; v *= 2) add(v);
  return out;
}

std::string derived_name(const spec::CacheShape& small, const spec::CacheShape& derived) {
  std::string changes;
  for (const auto& [name, value] : derived.params) {
    if (small.get(name) == value) continue;
    changes += (changes.empty() ? "" : ",") + name + "=" + std::to_string(value);
  }
  return changes.empty() ? small.name : small.name + "[" + changes + "]";
}

ShapeChoice cross_check_shape(const std::shared_ptr<const spec::Layout>& source,
                              const std::shared_ptr<const spec::Layout>& target, const spec::CacheShape& small,
                              const spec::CacheShape& proof) {
  const layout::BoundLayout bs = layout::bind(source, small), bt = layout::bind(target, small);
  if (bs.fits() && bt.fits()) return {small, ""};
  std::string misfits;
  std::vector<std::string> varied;
  for (const layout::BoundLayout* b : {&bs, &bt}) {
    if (b->fits()) continue;
    misfits += (misfits.empty() ? "" : "; ") + b->layout->name + " does not fit " + small.name + " (" +
               b->misfits.front().what + ")";
    add_varied(*b, varied);
  }
  if (varied.empty()) return {std::nullopt, misfits + "; no cache-shape parameter to vary"};

  std::vector<std::vector<std::int64_t>> values;
  for (const auto& p : varied) values.push_back(candidate_values(p, small, proof));
  std::vector<std::size_t> digit(varied.size(), 0);  // an odometer over the candidates, last fastest
  bool done = false;  // every combination tried
  for (std::size_t tries = 0; !done && tries < kDerivationTries; ++tries) {
    spec::CacheShape shape = small;
    for (std::size_t i = 0; i < varied.size(); ++i) shape.params[varied[i]] = values[i][digit[i]];
    shape.name = derived_name(small, shape);
    shape.synthetic = true;
    shape.model.clear();
    shape.cite.reset();
    shape.description = "derived from " + small.name + " to cross-check pairs with a layout that does not fit it";
    if (fits_within_limits(source, shape) && fits_within_limits(target, shape)) return {shape, ""};
    done = true;
    for (std::size_t i = varied.size(); done && i-- > 0;) {
      if (++digit[i] < values[i].size()) done = false;
      else digit[i] = 0;
    }
  }
  std::string tried;
  for (std::size_t i = 0; i < varied.size(); ++i) tried += (i ? ", " : "") + varied[i] + " in " + list(values[i]);
  return {std::nullopt, misfits + "; no shape derived from " + small.name + " by varying " + tried +
                            (done ? "" : " (the first " + std::to_string(kDerivationTries) + " combinations)") +
                            " lets both fit within the enumeration limits"};
}

}  // namespace kvlayout::enumerate

// The geometry check's axis phase: a record's shape and element strides against the declared view's
// extents and strides (after stride_order), each declared value recomputed through the view algebra
// (element offsets of unit index vectors), never by a second formula.
#include <algorithm>
#include <limits>

#include "check/geometry_record_context.hpp"
#include "expr/arithmetic.hpp"
#include "layout/view_algebra.hpp"

namespace kvlayout::check::geometry_detail {
namespace {

std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The declared extent of axis k as written in the spec ("num_blocks"), or "" when unknown.
std::string axis_text(const layout::BoundLayout& bound, const layout::BoundTensor& t, int view, std::size_t k) {
  for (const auto& decl : bound.layout->tensors) {
    if (decl.name != t.name || view >= static_cast<int>(decl.views.size())) continue;
    const auto& shape = decl.views[static_cast<std::size_t>(view)].shape;
    // A literal extent ("2") says nothing the declared value does not.
    if (k < shape.size()) return shape[k].text == std::to_string(t.views[static_cast<std::size_t>(view)].extents[k]) ? "" : shape[k].text;
  }
  return "";
}

// The element stride of axis k as the concrete evaluator sees it: offset(e_k) - offset(0).
// @pre extents[k] > 1 (e_k is then inside the box)
std::int64_t declared_stride(const layout::BoundView& v, std::size_t k) {
  std::vector<std::int64_t> index(v.extents.size(), 0);
  std::int64_t base = *layout::element_offset(v, index);
  index[k] = 1;
  return *layout::element_offset(v, index) - base;
}

}  // namespace

void compare_axes(RecordContext& c, const layout::BoundTensor& t, int view_index) {
  const auto& v = t.views[static_cast<std::size_t>(view_index)];
  if (c.record.shape.size() != v.extents.size()) {
    Mismatch m = c.base();
    m.field = "shape";
    m.declared = v.extents;
    m.observed = c.record.shape;
    m.text = "shape: declared " + std::to_string(v.extents.size()) + " axes " + list(v.extents) + ", observed " +
             std::to_string(c.record.shape.size()) + " axes " + list(c.record.shape);
    c.add(m);
    return;
  }
  // The declared extents in another order: an axis-order mix-up (K/V-first against blocks-first), where
  // rebinding a parameter to the observed extent would be the wrong advice.
  std::vector<std::int64_t> a = v.extents, b = c.record.shape;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const bool permuted = a == b;
  bool extents_match = true;
  for (std::size_t k = 0; k < v.extents.size(); ++k) {
    if (c.record.shape[k] == v.extents[k]) continue;
    extents_match = false;
    Mismatch m = c.base();
    m.field = "shape";
    m.axis = static_cast<int>(k);
    m.axis_expr = axis_text(c.bound, t, view_index, k);
    m.declared = v.extents[k];
    m.observed = c.record.shape[k];
    m.text = "extent of axis " + std::to_string(k) + (m.axis_expr.empty() ? "" : " (" + m.axis_expr + ")") + ": declared " +
             std::to_string(v.extents[k]) + ", observed " + std::to_string(c.record.shape[k]);
    auto param = c.bound.values.find(m.axis_expr);
    if (permuted)
      m.text += " (the tensor has the declared extents " + list(v.extents) + " in another order " + list(c.record.shape) + ")";
    else if (param != c.bound.values.end())
      m.text += " (if the tensor is right, bind it with --param " + m.axis_expr + "=" + std::to_string(c.record.shape[k]) + ")";
    c.add(m);
  }
  if (!extents_match) return;  // strides of a differently-shaped tensor say nothing more
  // Innermost (smallest declared stride) first: a padded page changes the page stride and every stride
  // above it, and the first line reported should be the page's.
  std::vector<std::pair<std::int64_t, std::size_t>> axes;
  for (std::size_t k = 0; k < v.extents.size(); ++k)
    if (v.extents[k] > 1) axes.emplace_back(declared_stride(v, k), k);
  std::stable_sort(axes.begin(), axes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& axis : axes) {
    const std::size_t k = axis.second;
    const std::int64_t declared = axis.first;
    if (c.record.stride[k] == declared) continue;
    Mismatch m = c.base();
    m.field = "stride";
    m.axis = static_cast<int>(k);
    m.axis_expr = axis_text(c.bound, t, view_index, k);
    m.declared = declared;
    m.observed = c.record.stride[k];
    m.text = "stride of axis " + std::to_string(k) + (m.axis_expr.empty() ? "" : " (extent " + m.axis_expr + ")") +
             ": declared " + std::to_string(declared) + ", observed " + std::to_string(c.record.stride[k]) + " elements";
    // The element one step along the axis, where each side puts it (the concrete evaluator's element offset
    // against the tensor's storage_offset + stride).
    std::vector<std::int64_t> index(v.extents.size(), 0);
    index[k] = 1;
    m.extra = {{"index", index}, {"declared_element", *layout::element_offset(v, index)}};
    if (c.record.stride[k] <= std::numeric_limits<std::int64_t>::max() - c.record.storage_offset)
      m.extra["observed_element"] = c.record.storage_offset + c.record.stride[k];
    c.add(m);
  }
}

}  // namespace kvlayout::check::geometry_detail

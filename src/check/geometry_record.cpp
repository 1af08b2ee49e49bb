// The geometry check, phase 1: one dump record against the declared view it names. Every declared value
// is recomputed here through the view algebra (element offsets of unit index vectors, box volumes, byte
// sizes), never by a second formula, so a reported "declared" value is the one prove and emit use.
#include <algorithm>
#include <limits>
#include <sstream>

#include "check/geometry_mismatch.hpp"
#include "check/tensor_dump.hpp"
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

struct RecordContext {
  const layout::BoundLayout& bound;
  const TensorRecord& record;
  std::vector<Mismatch>& out;
  Mismatch base() const {
    Mismatch m;
    m.record = record.path;
    m.tensor = record.tensor;
    m.instance = record.instance;
    m.view = record.view;
    return m;
  }
  void add(Mismatch m) { out.push_back(std::move(m)); }
};

// Which declared tensor, view and instance the record names (a name the declaration lacks is a mismatch:
// the dump is well-formed, the declaration describes other tensors).
std::optional<Target> resolve(RecordContext& c) {
  const auto& tensors = c.bound.tensors;
  Target target;
  std::string names;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    names += (names.empty() ? "" : ", ") + tensors[i].name;
    if (tensors[i].name == c.record.tensor) target.tensor = static_cast<int>(i);
  }
  if (target.tensor < 0) {
    Mismatch m = c.base();
    m.field = "tensor";
    m.declared = names;
    m.observed = c.record.tensor;
    m.text = "tensor \"" + c.record.tensor + "\" is not declared (the declaration has " + names + ")";
    c.add(m);
    return std::nullopt;
  }
  const auto& t = tensors[static_cast<std::size_t>(target.tensor)];
  target.view = 0;
  if (c.record.view) {
    target.view = -1;
    for (std::size_t j = 0; j < t.views.size(); ++j)
      if (t.views[j].name == *c.record.view) target.view = static_cast<int>(j);
    if (target.view < 0) {
      std::string views;
      for (const auto& v : t.views) views += (views.empty() ? "" : ", ") + v.name;
      Mismatch m = c.base();
      m.field = "view";
      m.declared = views;
      m.observed = *c.record.view;
      m.text = "view \"" + *c.record.view + "\" is not a view of " + t.name + " (declared: " + views + ")";
      c.add(m);
      return std::nullopt;
    }
  }
  if (c.record.instance >= t.instances) {
    Mismatch m = c.base();
    m.field = "instance";
    m.declared = t.instances;
    m.observed = c.record.instance;
    m.text = "instance " + std::to_string(c.record.instance) + " of " + t.name + " is not declared (declared " +
             std::to_string(t.instances) + " instance(s)" + (t.per >= 0 ? ", one per " + c.bound.coord_names[static_cast<std::size_t>(t.per)] : "") + ")";
    c.add(m);
    return std::nullopt;
  }
  return target;
}

// Element type: the declared bytes, and a storage type that can hold the declared type.
void compare_element(RecordContext& c) {
  const spec::DType declared = c.bound.layout->dtype;
  const std::int64_t bytes = c.bound.element_bytes();
  if (c.record.element_size != bytes) {
    Mismatch m = c.base();
    m.field = "element_size";
    m.declared = bytes;
    m.observed = c.record.element_size;
    m.text = "element_size: declared " + std::to_string(bytes) + " (" + spec::dtype_name(declared) + "), observed " +
             std::to_string(c.record.element_size) + " (" + c.record.dtype + ")";
    c.add(m);
  } else if (auto stored = parse_storage_dtype(c.record.dtype); !stored || !storage_compatible(*stored, declared)) {
    Mismatch m = c.base();
    m.field = "dtype";
    m.declared = spec::dtype_name(declared);
    m.observed = c.record.dtype;
    m.text = "dtype: declared " + spec::dtype_name(declared) + ", observed " + c.record.dtype +
             " (neither that type nor a raw unsigned container of its width)";
    c.add(m);
  }
}

// Extents in the declared (logical) order, then element strides of every axis that has more than one index
// (the stride of an axis of extent 1 never reaches memory, and torch leaves it arbitrary).
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

void compare_field(RecordContext& c, const std::string& field, std::int64_t declared, std::int64_t observed,
                   const std::string& unit) {
  if (declared == observed) return;
  Mismatch m = c.base();
  m.field = field;
  m.declared = declared;
  m.observed = observed;
  m.text = field + ": declared " + std::to_string(declared) + ", observed " + std::to_string(observed) + " " + unit;
  c.add(m);
}

// Where the view starts in its allocation, how many bytes it spans, and whether the allocation is large
// enough for the declared instance.
void compare_sizes(RecordContext& c, const layout::BoundTensor& t, int view_index) {
  const auto& v = t.views[static_cast<std::size_t>(view_index)];
  const std::int64_t esz = c.bound.element_bytes();
  compare_field(c, "storage_offset", v.offset, c.record.storage_offset, "elements");
  try {
    compare_field(c, "nbytes", layout::byte_offset(layout::box_volume(v.extents), esz), c.record.nbytes, "bytes");
  } catch (const expr::ArithmeticError&) {
    // A view with zero strides can index more elements than int64 counts; no tensor's nbytes equals that.
    Mismatch m = c.base();
    m.field = "nbytes";
    m.declared = "more than 2^63 - 1";
    m.observed = c.record.nbytes;
    m.text = "nbytes: the declared view's element count x element size overflows 64 bits, observed " +
             std::to_string(c.record.nbytes) + " bytes";
    c.add(m);
  }
  const std::int64_t allocation = layout::byte_offset(t.size, esz);
  if (c.record.storage_nbytes && *c.record.storage_nbytes < allocation) {
    Mismatch m = c.base();
    m.field = "storage_nbytes";
    m.declared = allocation;
    m.observed = *c.record.storage_nbytes;
    m.text = "storage_nbytes: the declared allocation of " + t.name + " is " + std::to_string(allocation) +
             " bytes, the tensor's storage has " + std::to_string(*c.record.storage_nbytes);
    c.add(m);
  }
}

}  // namespace

std::optional<Target> compare_record(const layout::BoundLayout& bound, const TensorRecord& record,
                                     std::vector<Mismatch>& out) {
  RecordContext c{bound, record, out};
  auto target = resolve(c);
  if (!target) return std::nullopt;
  const auto& t = bound.tensors[static_cast<std::size_t>(target->tensor)];
  compare_element(c);
  compare_axes(c, t, target->view);
  compare_sizes(c, t, target->view);
  return target;
}

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace kvlayout::check::geometry_detail

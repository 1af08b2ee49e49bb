// The geometry check, phase 1: one dump record against the declared view it names. Every declared value
// is recomputed here through the view algebra (element offsets of unit index vectors, box volumes, byte
// sizes), never by a second formula, so a reported "declared" value is the one prove and emit use.
// The axes (extents and strides) are geometry_axes.cpp's.
#include <algorithm>
#include <limits>
#include <sstream>

#include "check/geometry_record_context.hpp"
#include "check/geometry_mismatch.hpp"
#include "check/tensor_dump.hpp"
#include "expr/arithmetic.hpp"
#include "layout/view_algebra.hpp"

namespace kvlayout::check::geometry_detail {
namespace {

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
             std::to_string(t.instances) + " instance(s)" +
             (t.per >= 0 ? ", one per " + c.bound.coord_names[static_cast<std::size_t>(t.per)] +
                               (t.per_first != 0 || t.instances != c.bound.coord_extents[static_cast<std::size_t>(t.per)]
                                    ? " in [" + std::to_string(t.per_first) + ", " + std::to_string(t.per_first + t.instances) + ")"
                                    : "")
                         : "") +
             ")";
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

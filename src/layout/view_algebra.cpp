#include "layout/view_algebra.hpp"

#include <algorithm>

#include "expr/arithmetic.hpp"

namespace kvlayout::layout {

using expr::checked_add;
using expr::checked_mul;

Span span(const BoundView& view) {
  Span s{view.offset, view.offset};
  for (std::size_t k = 0; k < view.extents.size(); ++k)
    s.last = checked_add(s.last, checked_mul(view.extents[k] - 1, view.strides[k]));
  return s;
}

std::int64_t cosize(const BoundView& view) { return checked_add(span(view).last, 1); }

bool disjoint(const Span& a, const Span& b) { return a.last < b.first || b.last < a.first; }

std::optional<std::int64_t> element_offset(const BoundView& view, std::span<const std::int64_t> index) {
  for (std::size_t k = 0; k < index.size(); ++k)
    if (index[k] < 0 || index[k] >= view.extents[k]) return std::nullopt;
  // Inside the box every partial sum lies within the span, so the checked operations cannot throw on a
  // bound view; they stay checked so that a view bound by other means fails loudly, not silently.
  std::int64_t offset = view.offset;
  for (std::size_t k = 0; k < index.size(); ++k) offset = checked_add(offset, checked_mul(index[k], view.strides[k]));
  return offset;
}

std::int64_t byte_offset(std::int64_t element, std::int64_t element_bytes) { return checked_mul(element, element_bytes); }

std::int64_t tensor_bytes(const BoundTensor& tensor, std::int64_t element_bytes) {
  return checked_mul(tensor.instances, checked_mul(tensor.size, element_bytes));
}

std::int64_t storage_elements(const BoundLayout& bound) {
  std::int64_t n = 0;
  for (const auto& t : bound.tensors) n = checked_add(n, checked_mul(t.instances, t.size));
  return n;
}

std::int64_t box_volume(std::span<const std::int64_t> extents) {
  std::int64_t n = 1;
  for (std::int64_t e : extents) n = checked_mul(n, e);
  return n;
}

bool strides_injective(const BoundView& view) {
  std::vector<std::size_t> axes;
  for (std::size_t k = 0; k < view.extents.size(); ++k)
    if (view.extents[k] > 1) axes.push_back(k);
  std::sort(axes.begin(), axes.end(), [&](auto a, auto b) { return view.strides[a] < view.strides[b]; });
  std::int64_t reach = 0;  // the largest offset the axes seen so far reach, at most span().last - offset
  for (std::size_t k : axes) {
    if (view.strides[k] <= reach) return false;
    reach = checked_add(reach, checked_mul(view.extents[k] - 1, view.strides[k]));
  }
  return true;
}

void check_view_fits(const BoundView& view, std::int64_t element_bytes) {
  // The last element's last byte: every byte offset of the view is below it.
  checked_add(byte_offset(span(view).last, element_bytes), element_bytes - 1);
}

void check_tensor_fits(const BoundTensor& tensor, std::int64_t element_bytes) { tensor_bytes(tensor, element_bytes); }

void check_storage_fits(const BoundLayout& bound) { byte_offset(storage_elements(bound), bound.element_bytes()); }

}  // namespace kvlayout::layout

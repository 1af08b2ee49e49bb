#pragma once
// The view algebra: the one home of the arithmetic on a bound view's extents, strides and offset, and on
// the sizes built from them (CuTe's size / cosize, byte offsets, stride injectivity). prove, enumerate,
// emit and addr all call these; none recomputes them. Every function is exact in int64 or throws
// expr::ArithmeticError: a recomputed, unchecked copy of `last offset` is how a 64-bit wrap-around once
// graded an out-of-bounds layout EXACT.
//
// bind() calls check_view_fits() and check_tensor_fits() on every view and tensor, so after a successful
// bind every quantity below fits in int64 and the functions that can throw never do on a bound layout.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "layout/bound_layout.hpp"

namespace kvlayout::layout {

// The element offsets a view can reach, inclusive: [first, last].
struct Span {
  std::int64_t first = 0;
  std::int64_t last = 0;
};

// @pre every extent > 0 and every stride >= 0 (bind guarantees both)
// @post for every index vector i with 0 <= i_k < extent_k: first <= offset + sum(i_k * stride_k) <= last,
//       and both bounds are reached; throws ArithmeticError when `last` does not fit in int64.
Span span(const BoundView& view);

// One past the largest element offset the view reaches (CuTe's cosize). Throws like span().
std::int64_t cosize(const BoundView& view);

// Whether two spans share no element offset.
bool disjoint(const Span& a, const Span& b);

// The element offset of an index vector: offset + sum(index_k * stride_k).
// @pre index.size() == view.extents.size()
// @post nullopt when some index lies outside [0, extent_k) (the offset is then not meaningful); otherwise
//       the offset, which lies within span(view) and so fits in int64 for a bound view.
std::optional<std::int64_t> element_offset(const BoundView& view, std::span<const std::int64_t> index);

// element * element_bytes; throws ArithmeticError when it does not fit in int64.
std::int64_t byte_offset(std::int64_t element, std::int64_t element_bytes);

// The bytes of every instance of a tensor: instances * size * element_bytes. Throws on overflow.
std::int64_t tensor_bytes(const BoundTensor& tensor, std::int64_t element_bytes);

// The elements of a layout's whole storage: the sum of instances * size over its tensors. Throws on overflow.
std::int64_t storage_elements(const BoundLayout& bound);

// The number of positions of a coordinate box: the product of its extents. Throws on overflow.
std::int64_t box_volume(std::span<const std::int64_t> extents);

// A sufficient condition for offset(i) to be injective on the view's index box: ordered by stride, each
// stride of an axis with extent > 1 exceeds the largest offset the smaller-stride axes reach (a mixed
// radix, gaps allowed).
// @pre span(view) fits in int64 (so every partial reach does)
// @post true implies i != j (both in the box) => offset(i) != offset(j)
bool strides_injective(const BoundView& view);

// Throw ArithmeticError unless the view's span and its last byte offset fit in int64.
void check_view_fits(const BoundView& view, std::int64_t element_bytes);
// Throw ArithmeticError unless size * element_bytes and tensor_bytes() fit in int64.
void check_tensor_fits(const BoundTensor& tensor, std::int64_t element_bytes);
// Throw ArithmeticError unless the bytes of the layout's whole storage fit in int64.
void check_storage_fits(const BoundLayout& bound);

}  // namespace kvlayout::layout

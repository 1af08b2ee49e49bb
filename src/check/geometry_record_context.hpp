#pragma once
// What comparing one dump record with its declared view carries through its phases (geometry_record.cpp:
// resolve, element, sizes; geometry_axes.cpp: extents and strides): the binding, the record and where the
// mismatches go. Internal to the geometry check.
#include <vector>

#include "check/geometry_mismatch.hpp"
#include "check/tensor_dump.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check::geometry_detail {

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

// Extents in the declared (logical) order, then element strides of every axis that has more than one index
// (the stride of an axis of extent 1 never reaches memory, and torch leaves it arbitrary).
void compare_axes(RecordContext& c, const layout::BoundTensor& t, int view_index);

}  // namespace kvlayout::check::geometry_detail

#pragma once
// One disagreement between a declaration and a tensor dump (internal to the geometry check): which record,
// which field or axis, the declared and the observed value. The first one found is the verdict's
// counterexample; every one found is a line of the report.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/geometry.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check::geometry_detail {

struct Mismatch {
  std::string record;                   // JSON pointer of the record ("/tensors/3"), or "/tensors"
  std::string tensor;
  std::optional<std::int64_t> instance;
  std::optional<std::string> view;
  std::string field;                    // "shape", "stride", "storage_offset", "dtype", "data_ptr", ...
  std::optional<int> axis;
  std::string axis_expr;                // the declared extent as written ("num_blocks"), when an axis
  nlohmann::json declared;
  nlohmann::json observed;
  std::string text;                     // one line, without the record prefix
  nlohmann::json extra = nlohmann::json::object();  // e.g. the other record of a shared allocation
};

// The declared tensor a record names, and its view (absent "view" = the first view).
struct Target {
  int tensor = -1;
  int view = -1;
};

// Phase 1 (geometry_record.cpp): the record against its declared view. Appends every disagreement;
// returns the target when the record names a declared tensor, view and instance, else nullopt.
std::optional<Target> compare_record(const layout::BoundLayout& bound, const TensorRecord& record,
                                     std::vector<Mismatch>& out);

// Phase 2 (geometry_sharing.cpp): records that share bytes of one allocation must be views of one declared
// tensor instance, and the views of one instance must agree where it starts. Throws SpecError for a record
// whose pointer arithmetic is impossible (data_ptr below storage_offset x element_size, or past 2^64).
void compare_sharing(const layout::BoundLayout& bound, const TensorDump& dump,
                     const std::vector<std::optional<Target>>& targets, std::vector<Mismatch>& out);

// Phase 3: every declared tensor instance appears in the dump.
void compare_coverage(const layout::BoundLayout& bound, const TensorDump& dump,
                      const std::vector<std::optional<Target>>& targets, std::vector<Mismatch>& out);

std::string hex(std::uint64_t v);

}  // namespace kvlayout::check::geometry_detail

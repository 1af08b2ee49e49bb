#pragma once
// Geometry: does a declaration, bound to a cache shape, describe the tensors a connector really sees?
// The tensor dump is what `scripts/dump_tensors.py` writes at registration time, one record per tensor
// instance: {"tensors": [{"tensor": "kv_cache", "instance": 0, "shape": [...], "stride": [...],
// "storage_offset": 0, "dtype": "bfloat16", "element_size": 2, "nbytes": N, "data_ptr": "0x7f..."}]}.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/result.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

struct TensorRecord {
  std::string path;                 // JSON pointer of the record in its file ("/tensors/3")
  std::string tensor;               // the declared tensor it claims to be
  std::optional<std::string> view;  // the declared view, when the tensor has several
  std::int64_t instance = 0;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> stride;  // in elements, as torch's stride()
  std::int64_t storage_offset = 0;   // in elements
  std::string dtype;                 // as torch or numpy spell it ("bfloat16", "float8_e4m3fn", "uint8")
  std::int64_t element_size = 0;
  std::int64_t nbytes = 0;
  std::optional<std::int64_t> storage_nbytes;  // the whole allocation, when the dump knows it
  std::uint64_t data_ptr = 0;
};

struct TensorDump {
  std::string file;
  std::vector<TensorRecord> records;
};

// Throws SpecError (exit 2) naming the file, the JSON path, what was found and what was expected.
TensorDump load_tensor_dump(const std::string& file);

// @pre bound.fits(). GEOMETRY_MISMATCH naming the record, the axis or field, the declared and the observed
// value; OK when every record matches its declared tensor instance (and records sharing an allocation are
// views of one declared tensor instance).
// What is compared, per record (a record without "view" is the tensor's first view):
//   tensor / view / instance  declared (a name the declaration lacks is a mismatch, not bad input: the dump
//                             is well-formed, the declaration describes other tensors)
//   element_size, dtype       the declared dtype's bytes; the same type, or a raw unsigned container of its
//                             width (uint8 for fp8/int8, uint16 for bf16/fp16: vLLM's fp8 caches, numpy)
//   shape, stride             the view's extents (declared logical order) and element strides (after
//                             stride_order / explicit strides); strides of extent-1 axes are not compared
//   storage_offset            the view's element offset in its tensor instance
//   nbytes, storage_nbytes    numel x element size; the storage at least the declared allocation
// and across records: the allocation of each record's instance, [data_ptr - storage_offset x element_size,
// + declared allocation bytes), is the same for every view of one instance and overlaps no other instance's;
// every declared instance has a record. Throws SpecError for pointer arithmetic the dump makes impossible.
CheckResult check_geometry(const layout::BoundLayout& bound, const TensorDump& dump);

}  // namespace kvlayout::check

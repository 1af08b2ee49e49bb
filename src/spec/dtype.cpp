#include "spec/dtype.hpp"

namespace kvlayout::spec {

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {DType::bf16,     DType::fp16,     DType::fp32, DType::fp8_e4m3,
                                         DType::fp8_e5m2, DType::int8, DType::uint8};
  return all;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType t : all_dtypes())
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::fp32: return 32;
    case DType::bf16: case DType::fp16: return 16;
    default: return 8;
  }
}
int dtype_bytes(DType t) { return dtype_bits(t) / 8; }
bool is_float(DType t) { return t != DType::int8 && t != DType::uint8; }

}  // namespace kvlayout::spec

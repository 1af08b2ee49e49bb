#pragma once
// Element types a cache can hold. The name is the *meaning* of the bits (vLLM stores fp8 in a uint8 tensor,
// but its elements are fp8_e4m3 values).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvlayout::spec {

enum class DType : std::uint8_t { bf16, fp16, fp32, fp8_e4m3, fp8_e5m2, int8, uint8 };

const std::vector<DType>& all_dtypes();
std::string dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& name);
int dtype_bytes(DType t);
int dtype_bits(DType t);
bool is_float(DType t);

}  // namespace kvlayout::spec

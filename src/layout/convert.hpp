#pragma once
// Element values and conversions between element types, bit-exact and independent of the host's types:
// IEEE binary formats (fp32, bf16, fp16, fp8_e5m2) with round-to-nearest-even and overflow to infinity;
// fp8_e4m3 as float8_e4m3fn (no infinity, one NaN pattern per sign, max 448, overflow to NaN as PyTorch
// casts do); int8/uint8 by value, floats rounded to nearest even and saturated, NaN to 0.
#include <cstdint>
#include <string>

#include "spec/dtype.hpp"

namespace kvlayout::layout {

// The value of a bit pattern (the low dtype_bits(type) bits of `bits`); NaN for NaN patterns.
// Every value of every supported type is exactly a double.
double decode(spec::DType type, std::uint32_t bits);
// The bit pattern nearest to `value` under the type's rounding rule.
std::uint32_t encode(spec::DType type, double value);
// encode(to, decode(from, bits)).
std::uint32_t convert(spec::DType from, spec::DType to, std::uint32_t bits);

bool is_nan(spec::DType type, std::uint32_t bits);
// "0x3f81"-style hex of a pattern, width from the type.
std::string format_bits(spec::DType type, std::uint32_t bits);
// The shortest decimal that identifies the value in its type ("1.0078125", "-0", "nan", "inf").
std::string format_decimal(spec::DType type, std::uint32_t bits);

}  // namespace kvlayout::layout

#include "layout/convert.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace kvlayout::layout {
namespace {

using spec::DType;

struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
  bool ieee;  // all-ones exponent is infinity/NaN; false = float8_e4m3fn (only S.1111.111 is NaN)
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  int min_exponent() const { return 1 - bias(); }
  std::uint32_t exponent_mask() const { return (1u << exponent_bits) - 1; }
  double max_finite() const {
    int top = ieee ? static_cast<int>(exponent_mask()) - 1 : static_cast<int>(exponent_mask());
    std::uint32_t top_mantissa = ieee ? (1u << mantissa_bits) - 1 : (1u << mantissa_bits) - 2;
    return std::ldexp(1.0 + std::ldexp(static_cast<double>(top_mantissa), -mantissa_bits), top - bias());
  }
};

FloatFormat format_of(DType t) {
  switch (t) {
    case DType::fp32: return {8, 23, true};
    case DType::bf16: return {8, 7, true};
    case DType::fp16: return {5, 10, true};
    case DType::fp8_e5m2: return {5, 2, true};
    case DType::fp8_e4m3: return {4, 3, false};
    default: return {0, 0, true};
  }
}

std::uint32_t width_mask(DType t) {
  int bits = spec::dtype_bits(t);
  return bits == 32 ? 0xffffffffu : (1u << bits) - 1;
}

double decode_float(const FloatFormat& f, std::uint32_t bits) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (bits >> (total - 1)) & 1u;
  const std::uint32_t exponent = (bits >> f.mantissa_bits) & f.exponent_mask();
  const std::uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1);
  double magnitude;
  if (f.ieee && exponent == f.exponent_mask()) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee && exponent == f.exponent_mask() && mantissa == (1u << f.mantissa_bits) - 1) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), f.min_exponent() - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits),
                           static_cast<int>(exponent) - f.bias());
  }
  return negative ? -magnitude : magnitude;
}

// Round-to-nearest-even of x to a multiple of 2^q (exact in double for these formats).
double round_to_quantum(double x, int q) {
  double scaled = std::ldexp(x, -q);
  double r = std::nearbyint(scaled);  // default rounding mode: to nearest, ties to even
  return std::ldexp(r, q);
}

std::uint32_t encode_float(const FloatFormat& f, double value) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const std::uint32_t sign = std::signbit(value) ? (1u << (total - 1)) : 0u;
  const std::uint32_t nan = f.ieee ? (f.exponent_mask() << f.mantissa_bits) | (1u << (f.mantissa_bits - 1))
                                   : (f.exponent_mask() << f.mantissa_bits) | ((1u << f.mantissa_bits) - 1);
  const std::uint32_t inf = f.ieee ? f.exponent_mask() << f.mantissa_bits : nan;
  if (std::isnan(value)) return sign | nan;
  double a = std::fabs(value);
  if (std::isinf(a)) return sign | inf;
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit has weight 2^(e-1)
  int exponent = e - 1;
  int quantum = (exponent < f.min_exponent() ? f.min_exponent() : exponent) - f.mantissa_bits;
  double r = round_to_quantum(a, quantum);
  if (r > f.max_finite()) return sign | inf;
  if (r == 0.0) return sign;
  if (r < std::ldexp(1.0, f.min_exponent()))
    return sign | static_cast<std::uint32_t>(std::ldexp(r, f.mantissa_bits - f.min_exponent()));
  std::frexp(r, &e);
  exponent = e - 1;
  auto mantissa = static_cast<std::uint32_t>(std::ldexp(r, f.mantissa_bits - exponent)) & ((1u << f.mantissa_bits) - 1);
  return sign | (static_cast<std::uint32_t>(exponent + f.bias()) << f.mantissa_bits) | mantissa;
}

// The value of a pattern, computed (the definition; decode() reads it from a table where it can).
double decode_computed(DType type, std::uint32_t bits) {
  if (type == DType::int8) return static_cast<double>(static_cast<std::int8_t>(static_cast<std::uint8_t>(bits)));
  if (type == DType::uint8) return static_cast<double>(bits);
  return decode_float(format_of(type), bits);
}

// Every byte oracle decodes (and converts) each element it moves, and ldexp dominated their profiles: for
// the types of at most 16 bits the value of every pattern is computed once, by decode_computed, into a table.
std::vector<double> table_of(DType type) {
  std::vector<double> table(std::size_t{1} << spec::dtype_bits(type));
  for (std::uint32_t bits = 0; bits < table.size(); ++bits) table[bits] = decode_computed(type, bits);
  return table;
}

const std::vector<double>* decode_table(DType type) {
  switch (type) {
    case DType::bf16: { static const auto table = table_of(DType::bf16); return &table; }
    case DType::fp16: { static const auto table = table_of(DType::fp16); return &table; }
    case DType::fp8_e5m2: { static const auto table = table_of(DType::fp8_e5m2); return &table; }
    case DType::fp8_e4m3: { static const auto table = table_of(DType::fp8_e4m3); return &table; }
    case DType::int8: { static const auto table = table_of(DType::int8); return &table; }
    case DType::uint8: { static const auto table = table_of(DType::uint8); return &table; }
    default: return nullptr;
  }
}

}  // namespace

double decode(DType type, std::uint32_t bits) {
  bits &= width_mask(type);
  if (const std::vector<double>* table = decode_table(type)) return (*table)[bits];
  return decode_computed(type, bits);
}

std::uint32_t encode(DType type, double value) {
  if (type == DType::int8 || type == DType::uint8) {
    if (std::isnan(value)) return 0;
    double lo = type == DType::int8 ? -128.0 : 0.0, hi = type == DType::int8 ? 127.0 : 255.0;
    double r = std::nearbyint(value);
    r = r < lo ? lo : r > hi ? hi : r;
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(r)) & 0xffu;
  }
  return encode_float(format_of(type), value);
}

std::uint32_t convert(DType from, DType to, std::uint32_t bits) {
  // Within one type every pattern but a NaN's is its own value's encoding (encode(t, decode(t, b)) == b; the
  // convert tests check it for every pattern of every type of at most 16 bits), so it is returned as is.
  // A NaN goes through encode, which makes it the type's canonical NaN.
  if (from == to && !is_nan(from, bits)) return bits & width_mask(from);
  return encode(to, decode(from, bits));
}

bool is_nan(DType type, std::uint32_t bits) { return std::isnan(decode(type, bits)); }

std::string format_bits(DType type, std::uint32_t bits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", spec::dtype_bits(type) / 4, bits & width_mask(type));
  return buf;
}

std::string format_decimal(DType type, std::uint32_t bits) {
  double v = decode(type, bits);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // The shortest %g that reads back to exactly this value (every value here is exactly a double, so this
  // is the exact decimal when it has at most 17 significant digits: 1.0078125, not a rounded 1.01).
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    double back = std::strtod(buf, nullptr);
    if (back == v && std::signbit(back) == std::signbit(v)) return buf;
  }
  return buf;
}

}  // namespace kvlayout::layout

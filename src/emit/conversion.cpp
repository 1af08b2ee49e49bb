#include "emit/conversion.hpp"

namespace kvlayout::emit {
namespace {

struct Format {
  int e, m;
  bool ieee;
};

Format format(spec::DType t) {
  switch (t) {
    case spec::DType::fp32: return {8, 23, true};
    case spec::DType::bf16: return {8, 7, true};
    case spec::DType::fp16: return {5, 10, true};
    case spec::DType::fp8_e5m2: return {5, 2, true};
    case spec::DType::fp8_e4m3: return {4, 3, false};
    default: return {0, 0, true};
  }
}

std::string decode(spec::DType t) {
  if (t == spec::DType::int8) return "static_cast<double>(static_cast<int8_t>(static_cast<uint8_t>(bits)))";
  if (t == spec::DType::uint8) return "static_cast<double>(bits & 0xffu)";
  Format f = format(t);
  return "kv_decode_float<" + std::to_string(f.e) + ", " + std::to_string(f.m) + ", " + (f.ieee ? "true" : "false") + ">(bits)";
}

std::string encode(spec::DType t) {
  if (t == spec::DType::int8) return "kv_encode_int(v, -128.0, 127.0)";
  if (t == spec::DType::uint8) return "kv_encode_int(v, 0.0, 255.0)";
  Format f = format(t);
  return "kv_encode_float<" + std::to_string(f.e) + ", " + std::to_string(f.m) + ", " + (f.ieee ? "true" : "false") + ">(v)";
}

}  // namespace

std::string conversion_source(spec::DType from, spec::DType to, const std::string& q) {
  std::string s = R"(// Element conversion (round to nearest even; float8_e4m3fn has no infinity and overflows to NaN).
template <int E, int M, bool IEEE>
)" + q + R"( static inline double kv_decode_float(uint32_t bits) {
  const int total = 1 + E + M, bias = (1 << (E - 1)) - 1;
  const uint32_t emask = (1u << E) - 1;
  const bool negative = (bits >> (total - 1)) & 1u;
  const uint32_t exponent = (bits >> M) & emask, mantissa = bits & ((1u << M) - 1);
  double magnitude;
  if (IEEE && exponent == emask) magnitude = mantissa == 0 ? INFINITY : NAN;
  else if (!IEEE && exponent == emask && mantissa == (1u << M) - 1) magnitude = NAN;
  else if (exponent == 0) magnitude = ldexp(static_cast<double>(mantissa), 1 - bias - M);
  else magnitude = ldexp(1.0 + ldexp(static_cast<double>(mantissa), -M), static_cast<int>(exponent) - bias);
  return negative ? -magnitude : magnitude;
}
template <int E, int M, bool IEEE>
)" + q + R"( static inline uint32_t kv_encode_float(double value) {
  const int total = 1 + E + M, bias = (1 << (E - 1)) - 1, min_exponent = 1 - bias;
  const uint32_t emask = (1u << E) - 1;
  const uint32_t sign = signbit(value) ? (1u << (total - 1)) : 0u;
  const uint32_t nan = IEEE ? (emask << M) | (1u << (M - 1)) : (emask << M) | ((1u << M) - 1);
  const uint32_t inf = IEEE ? emask << M : nan;
  const int top = IEEE ? static_cast<int>(emask) - 1 : static_cast<int>(emask);
  const uint32_t top_mantissa = IEEE ? (1u << M) - 1 : (1u << M) - 2;
  const double max_finite = ldexp(1.0 + ldexp(static_cast<double>(top_mantissa), -M), top - bias);
  if (isnan(value)) return sign | nan;
  double a = fabs(value);
  if (isinf(a)) return sign | inf;
  if (a == 0.0) return sign;
  int e;
  frexp(a, &e);
  int exponent = e - 1;
  int quantum = (exponent < min_exponent ? min_exponent : exponent) - M;
  double r = ldexp(nearbyint(ldexp(a, -quantum)), quantum);
  if (r > max_finite) return sign | inf;
  if (r == 0.0) return sign;
  if (r < ldexp(1.0, min_exponent)) return sign | static_cast<uint32_t>(ldexp(r, M - min_exponent));
  frexp(r, &e);
  exponent = e - 1;
  uint32_t mantissa = static_cast<uint32_t>(ldexp(r, M - exponent)) & ((1u << M) - 1);
  return sign | (static_cast<uint32_t>(exponent + bias) << M) | mantissa;
}
)" + q + R"( static inline uint32_t kv_encode_int(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  double r = nearbyint(v);
  r = r < lo ? lo : r > hi ? hi : r;
  return static_cast<uint32_t>(static_cast<int64_t>(r)) & 0xffu;
}
)" + q + " static inline uint32_t kv_convert(uint32_t bits) {\n  const double v = " + decode(from) + ";\n  return " +
                  encode(to) + ";\n}\n";
  return s;
}

}  // namespace kvlayout::emit

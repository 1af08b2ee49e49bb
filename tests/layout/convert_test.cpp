#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "layout/convert.hpp"

using kvlayout::spec::DType;
using namespace kvlayout::layout;

namespace {
std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
}  // namespace

TEST_CASE("fp32 decode and encode agree with the host's IEEE floats", "[layout][convert]") {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 3.14159265f, 1e-45f, 1.17549435e-38f, 3.4028235e38f, 65504.0f}) {
    CHECK(decode(DType::fp32, float_bits(f)) == static_cast<double>(f));
    CHECK(encode(DType::fp32, f) == float_bits(f));
  }
  CHECK(std::isinf(decode(DType::fp32, 0x7f800000u)));
  CHECK(is_nan(DType::fp32, 0x7fc00000u));
}

TEST_CASE("bf16 is the top half of fp32, rounded to nearest even", "[layout][convert]") {
  CHECK(encode(DType::bf16, 1.0) == 0x3f80u);
  CHECK(decode(DType::bf16, 0x3f81u) == 1.0078125);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0)
  CHECK(encode(DType::bf16, 1.0 + std::ldexp(1.0, -8)) == 0x3f80u);
  CHECK(encode(DType::bf16, 1.0 + 3 * std::ldexp(1.0, -8)) == 0x3f82u);
  for (std::uint32_t b = 0; b < 0x10000u; b += 7) {
    if (is_nan(DType::bf16, b)) continue;
    CHECK(convert(DType::bf16, DType::fp32, b) == b << 16);
  }
}

TEST_CASE("fp16 covers normals, subnormals, infinity and overflow", "[layout][convert]") {
  CHECK(encode(DType::fp16, 65504.0) == 0x7bffu);
  CHECK(encode(DType::fp16, 65520.0) == 0x7c00u);  // rounds up past the max: infinity
  CHECK(decode(DType::fp16, 0x0001u) == std::ldexp(1.0, -24));
  CHECK(encode(DType::fp16, std::ldexp(1.0, -25)) == 0x0000u);  // tie to even: zero
  CHECK(encode(DType::fp16, std::ldexp(3.0, -26)) == 0x0001u);
  CHECK(encode(DType::fp16, -0.0) == 0x8000u);
}

TEST_CASE("float8_e4m3fn: max 448, no infinity, NaN only at S.1111.111", "[layout][convert]") {
  CHECK(decode(DType::fp8_e4m3, 0x7eu) == 448.0);
  CHECK(is_nan(DType::fp8_e4m3, 0x7fu));
  CHECK(is_nan(DType::fp8_e4m3, 0xffu));
  CHECK(decode(DType::fp8_e4m3, 0x78u) == 256.0);  // exponent all ones is still a number
  CHECK(decode(DType::fp8_e4m3, 0x01u) == std::ldexp(1.0, -9));
  CHECK(encode(DType::fp8_e4m3, 1.0) == 0x38u);
  CHECK(encode(DType::fp8_e4m3, 460.0) == 0x7eu);   // rounds down to 448
  CHECK(is_nan(DType::fp8_e4m3, encode(DType::fp8_e4m3, 500.0)));  // overflow: NaN, no infinity
  for (std::uint32_t b = 0; b < 256; ++b) {
    if (is_nan(DType::fp8_e4m3, b)) continue;
    CHECK(convert(DType::fp8_e4m3, DType::fp8_e4m3, b) == b);
    CHECK(convert(DType::bf16, DType::fp8_e4m3, convert(DType::fp8_e4m3, DType::bf16, b)) == b);
  }
}

TEST_CASE("float8_e5m2 is IEEE-like with infinity", "[layout][convert]") {
  CHECK(decode(DType::fp8_e5m2, 0x7bu) == 57344.0);
  CHECK(std::isinf(decode(DType::fp8_e5m2, 0x7cu)));
  CHECK(is_nan(DType::fp8_e5m2, 0x7du));
  for (std::uint32_t b = 0; b < 256; ++b)
    if (!is_nan(DType::fp8_e5m2, b)) CHECK(convert(DType::fp16, DType::fp8_e5m2, convert(DType::fp8_e5m2, DType::fp16, b)) == b);
}

TEST_CASE("integers convert by value, saturating, floats round to nearest even", "[layout][convert]") {
  CHECK(encode(DType::int8, 2.5) == 2u);
  CHECK(encode(DType::int8, 3.5) == 4u);
  CHECK(encode(DType::int8, -1000.0) == 0x80u);
  CHECK(encode(DType::uint8, -3.0) == 0u);
  CHECK(decode(DType::int8, 0xffu) == -1.0);
  CHECK(convert(DType::int8, DType::uint8, 0xffu) == 0u);
  CHECK(format_bits(DType::bf16, 0x3f81u) == "0x3f81");
  CHECK(format_decimal(DType::bf16, 0x3f81u) == "1.0078125");
  CHECK(format_decimal(DType::fp32, 0x3f800000u) == "1");
  CHECK(format_decimal(DType::fp16, 0x8000u) == "-0");
}

TEST_CASE("a conversion within one type returns each pattern as is, NaNs made canonical, as encode(decode) does",
          "[layout][convert]") {
  // convert(t, t, b) skips encode for every non-NaN pattern; here the skipped path is run for every pattern
  // of every type of at most 16 bits (and a spread of fp32 ones) and must give the same bits.
  std::mt19937 random(7);
  for (DType t : {DType::bf16, DType::fp16, DType::fp8_e5m2, DType::fp8_e4m3, DType::int8, DType::uint8, DType::fp32}) {
    const bool wide = t == DType::fp32;
    const std::uint32_t count = wide ? 200000u : 1u << kvlayout::spec::dtype_bits(t);
    std::size_t nans = 0, mismatches = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint32_t b = wide ? (i < 16 ? (0x7f7ffff0u + i) ^ (i & 1u ? 0x80000000u : 0u) : random()) : i;
      const std::uint32_t through_encode = encode(t, decode(t, b));
      mismatches += convert(t, t, b) != through_encode;
      if (is_nan(t, b)) {
        ++nans;
        CHECK(std::isnan(decode(t, through_encode)));
      } else {
        mismatches += through_encode != b;  // the fact the shortcut rests on
      }
    }
    INFO(kvlayout::spec::dtype_name(t));
    CHECK(mismatches == 0);
    if (t != DType::int8 && t != DType::uint8) CHECK(nans > 0);
  }
  // The control: a NaN with a payload is not returned as is (the shortcut must not swallow NaNs).
  CHECK(convert(DType::bf16, DType::bf16, 0x7fc1u) == encode(DType::bf16, decode(DType::bf16, 0x7fc1u)));
  CHECK(convert(DType::bf16, DType::bf16, 0x7fc1u) != 0x7fc1u);
}

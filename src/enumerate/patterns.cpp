#include "enumerate/patterns.hpp"

#include "layout/convert.hpp"

namespace kvlayout::enumerate {

Patterns patterns_for(spec::DType type) {
  Patterns p;
  const int bits = spec::dtype_bits(type);
  // The poison: a NaN for float types (no position pattern is NaN), 0xA5 for 8-bit integers.
  switch (type) {
    case spec::DType::fp32: p.poison = 0x7fc0a5a5u; break;
    case spec::DType::bf16: p.poison = 0x7fa5u; break;
    case spec::DType::fp16: p.poison = 0x7ea5u; break;
    case spec::DType::fp8_e4m3: p.poison = 0x7fu; break;
    case spec::DType::fp8_e5m2: p.poison = 0x7eu; break;
    default: p.poison = 0xa5u; break;
  }
  // Safe patterns: all of a <= 16-bit type; for fp32 a spread of 2^16 (high and low bits both vary).
  const std::uint32_t count = bits <= 16 ? (1u << bits) : (1u << 16);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t v = bits <= 16 ? i : (i << 16) | ((i * 40503u) & 0xffffu);
    if (v == p.poison || layout::is_nan(type, v)) continue;
    p.safe.push_back(v);
  }
  return p;
}

std::uint32_t Patterns::of(std::int64_t position, int pass) const {
  auto base = static_cast<std::int64_t>(safe.size());
  for (int k = 0; k < pass; ++k) position /= base;
  return safe[static_cast<std::size_t>(position % base)];
}

int Patterns::passes(std::int64_t positions) const {
  int n = 1;
  auto base = static_cast<std::int64_t>(safe.size());
  for (std::int64_t reach = base; reach < positions; reach *= base) ++n;
  return n;
}

double scale_value(std::int64_t group) { return 1.5 + 0.25 * static_cast<double>(group % 4); }

}  // namespace kvlayout::enumerate

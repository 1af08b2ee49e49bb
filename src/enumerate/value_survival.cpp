#include "enumerate/value_survival.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "enumerate/patterns.hpp"
#include "layout/convert.hpp"

namespace kvlayout::enumerate {

using spec::DType;

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool sweep_exact(DType from, DType to) {
  static std::mutex mutex;
  static std::map<std::pair<DType, DType>, bool> memo;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(from, to);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  bool exact = true;
  const int bits = spec::dtype_bits(from);
  const std::uint32_t count = bits <= 16 ? (1u << bits) : (1u << 16);
  for (std::uint32_t i = 0; i < count && exact; ++i) {
    std::uint32_t v = bits <= 16 ? i : (i << 16) | ((i * 40503u) & 0xffffu);
    std::uint32_t back = layout::convert(to, from, layout::convert(from, to, v));
    exact = layout::is_nan(from, v) ? layout::is_nan(from, back) : back == v;
  }
  memo[key] = exact;
  return exact;
}

std::vector<double> position_scales(const Enumerated& e) {
  const auto& b = *e.bound;
  std::vector<double> out(static_cast<std::size_t>(box_size(b)), 1.0);
  if (!e.layout->scale) return out;
  std::vector<int> per;
  for (const auto& name : e.layout->scale->per) per.push_back(b.coord_index(name));
  for (std::int64_t p = 0; p < box_size(b); ++p) {
    std::vector<std::int64_t> c = coordinate_of(b, p);
    std::int64_t g = 0;
    for (int i : per) g = g * b.coord_extents[static_cast<std::size_t>(i)] + c[static_cast<std::size_t>(i)];
    out[static_cast<std::size_t>(p)] = scale_value(g);
  }
  return out;
}

}  // namespace kvlayout::enumerate

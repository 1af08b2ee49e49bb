#include "check/plan_storage.hpp"

#include <algorithm>

#include "layout/view_algebra.hpp"

namespace kvlayout::check {

StorageLine storage_line(const layout::BoundLayout& bound) {
  StorageLine line;
  line.element_bytes = bound.element_bytes();
  for (const auto& t : bound.tensors) {
    line.first.push_back(line.total);
    line.instance_bytes.push_back(layout::byte_offset(t.size, line.element_bytes));
    line.total += layout::tensor_bytes(t, line.element_bytes);  // the sum fits: check_storage_fits at bind
  }
  return line;
}

StorageByte storage_byte(const StorageLine& line, std::int64_t at) {
  auto it = std::upper_bound(line.first.begin(), line.first.end(), at);
  const std::size_t t = static_cast<std::size_t>(it - line.first.begin()) - 1;
  const std::int64_t within = at - line.first[t];
  return {static_cast<int>(t), within / line.instance_bytes[t], within % line.instance_bytes[t]};
}

std::vector<Region> sorted_by_base(std::vector<Region> regions) {
  std::sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
  return regions;
}

Relocated relocate(const std::vector<Region>& regions, const StorageLine& line, std::int64_t addr, std::int64_t len) {
  Relocated r;
  auto it = std::upper_bound(regions.begin(), regions.end(), addr, [](std::int64_t a, const Region& g) { return a < g.base; });
  if (it == regions.begin()) {
    r.why = "lies in no registered region";
    return r;
  }
  const Region& g = *(it - 1);
  const std::int64_t offset = addr - g.base;  // >= 0
  if (offset >= g.len) {
    r.why = "lies in no registered region";
    return r;
  }
  r.region = static_cast<int>(it - 1 - regions.begin());
  const std::int64_t allocation = line.instance_bytes[static_cast<std::size_t>(g.tensor)];
  const std::int64_t limit = std::min(g.len, allocation);
  // len > 0 and offset < g.len; compare without forming offset + len (which may overflow).
  if (offset >= limit || len > limit - offset) {
    const std::string what = limit == g.len ? "its region " + g.path
                                            : "the allocation of its tensor instance (" + std::to_string(allocation) + " bytes)";
    r.why = offset >= limit ? "starts " + std::to_string(offset - limit) + " byte(s) past the end of " + what
                            : "runs " + std::to_string(len - (limit - offset)) + " byte(s) past the end of " + what;
    return r;
  }
  r.ok = true;
  r.at = line.first[static_cast<std::size_t>(g.tensor)] + g.instance * allocation + offset;
  return r;
}

}  // namespace kvlayout::check

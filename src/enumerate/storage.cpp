#include "enumerate/storage.hpp"

#include <algorithm>
#include <cstring>

namespace kvlayout::enumerate {

Storage::Storage(const layout::BoundLayout& bound, const AddressMap& map) : bytes_(static_cast<int>(bound.element_bytes())) {
  (void)map;
  for (const auto& t : bound.tensors) {
    for (std::int64_t i = 0; i < t.instances; ++i) {
      buffer_first_.push_back(elements_);
      buffers_.emplace_back(static_cast<std::size_t>(t.size * bytes_));
      elements_ += t.size;
    }
  }
}

std::pair<std::size_t, std::size_t> Storage::where(std::int64_t e) const {
  auto it = std::upper_bound(buffer_first_.begin(), buffer_first_.end(), e);
  std::size_t b = static_cast<std::size_t>(it - buffer_first_.begin()) - 1;
  return {b, static_cast<std::size_t>((e - buffer_first_[b]) * bytes_)};
}

std::uint32_t Storage::get(std::int64_t e) const {
  auto [b, off] = where(e);
  std::uint32_t v = 0;
  std::memcpy(&v, buffers_[b].data() + off, static_cast<std::size_t>(bytes_));
  return v;
}

void Storage::set(std::int64_t e, std::uint32_t bits) {
  auto [b, off] = where(e);
  std::memcpy(buffers_[b].data() + off, &bits, static_cast<std::size_t>(bytes_));
}

void Storage::fill(std::uint32_t bits) {
  for (auto& buf : buffers_)
    for (std::size_t off = 0; off < buf.size(); off += static_cast<std::size_t>(bytes_))
      std::memcpy(buf.data() + off, &bits, static_cast<std::size_t>(bytes_));
}

std::vector<void*> Storage::bases() {
  std::vector<void*> out;
  for (auto& buf : buffers_) out.push_back(buf.data());
  return out;
}

}  // namespace kvlayout::enumerate

#pragma once
// A layout's storage as real bytes: one buffer per tensor instance, in declaration order (tensor 0's
// instances, then tensor 1's, ...), as an engine allocates it and as emitted kernels receive it.
#include <boost/align/aligned_allocator.hpp>
#include <cstdint>
#include <vector>

#include "enumerate/address_map.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::enumerate {

// Buffers start on a 64-byte line, as PyTorch's CPU allocator and every CUDA allocation do, so that an
// emitted kernel takes the same paths on them (streaming stores into whole lines) as on an engine's cache.
using Buffer = std::vector<std::uint8_t, boost::alignment::aligned_allocator<std::uint8_t, 64>>;

class Storage {
 public:
  Storage(const layout::BoundLayout& bound, const AddressMap& map);

  std::int64_t elements() const { return elements_; }
  int element_bytes() const { return bytes_; }
  // Element e of the whole storage (numbering as in AddressMap), little-endian.
  std::uint32_t get(std::int64_t e) const;
  void set(std::int64_t e, std::uint32_t bits);
  void fill(std::uint32_t bits);
  // Base pointers of every buffer, in declaration order (the kernel ABI's src[] / dst[]).
  std::vector<void*> bases();
  const std::vector<Buffer>& buffers() const { return buffers_; }

 private:
  std::pair<std::size_t, std::size_t> where(std::int64_t e) const;  // buffer, byte offset

  int bytes_;
  std::int64_t elements_ = 0;
  std::vector<std::int64_t> buffer_first_;  // first element of each buffer
  std::vector<Buffer> buffers_;
};

}  // namespace kvlayout::enumerate

#include "element_scatter.hpp"

#include <immintrin.h>

#include <cstring>

#include "parallel_parts.hpp"
#include "stream_copy.hpp"

namespace kvlayout::bench {

void scatter_rows(char* to, const char* from, std::size_t rows, const std::vector<std::uint32_t>& slots, ScatterDirection direction, int threads) {
  auto part = [&](int p) {
    alignas(64) std::uint16_t built[kScatterRowElements];
    alignas(64) std::uint16_t read[kScatterRowElements];
    const std::size_t begin = rows * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
    const std::size_t end = rows * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads);
    for (std::size_t r = begin; r < end; ++r) {
      std::memcpy(read, from + r * kScatterRowBytes, kScatterRowBytes);
      if (direction == ScatterDirection::IntoSlots)
        for (std::size_t t = 0; t < kScatterRowElements; ++t) built[slots[t]] = read[t];
      else
        for (std::size_t t = 0; t < kScatterRowElements; ++t) built[t] = read[slots[t]];
      // The row built in the buffer, streamed out whole (16-byte streaming stores: SSE2 is every x86-64's).
      stream_copy_sse2(to + r * kScatterRowBytes, reinterpret_cast<const char*>(built), kScatterRowBytes);
    }
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace kvlayout::bench

#pragma once
// The bench's bare loops copy with streaming stores (no read-for-ownership of target lines that are
// overwritten whole), as the kernels do: one home for that copy, used by the replay, the chunk patterns,
// the staged block transpose and the element scatter.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvlayout::bench {

__attribute__((target("avx2"))) inline void stream_copy_avx2(char* to, const char* from, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; k += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k)));
}

inline void stream_copy_sse2(char* to, const char* from, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k)));
}

// N bytes, N a multiple of 32 known at compile time: the loop unrolled, as the kernels' fixed-length
// copies are (emit/cpu.cpp's kv_stream_copy<N>), so that a replay of short runs is not slower than a
// kernel for its loop alone.
template <std::size_t N>
__attribute__((target("avx2"))) inline void stream_copy_avx2_fixed(char* to, const char* from) {
#pragma GCC unroll 64
  for (std::size_t k = 0; k < N; k += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k)));
}

// `bytes` from `from` to `to`: 32-byte streaming stores where `avx2` (the caller's CPU has it) and the
// target and length allow (unrolled for the run lengths the kernels copy most: 256 bytes to 2 KiB), else
// 16-byte ones, else a plain memcpy. The caller issues the store fence.
inline void stream_copy(char* to, const char* from, std::size_t bytes, bool avx2) {
  const auto at = reinterpret_cast<std::uintptr_t>(to);
  if (avx2 && at % 32 == 0) {
    switch (bytes) {
      case 256: return stream_copy_avx2_fixed<256>(to, from);
      case 512: return stream_copy_avx2_fixed<512>(to, from);
      case 1024: return stream_copy_avx2_fixed<1024>(to, from);
      case 2048: return stream_copy_avx2_fixed<2048>(to, from);
      default: break;
    }
  }
  if (avx2 && at % 32 == 0 && bytes % 32 == 0) stream_copy_avx2(to, from, bytes);
  else if (at % 16 == 0 && bytes % 16 == 0) stream_copy_sse2(to, from, bytes);
  else std::memcpy(to, from, bytes);
}

}  // namespace kvlayout::bench

#pragma once
// The bench's 16-bit transposes in AVX2 registers, one home for the unpack network the transposing
// patterns share (block_transpose.cpp, row_transpose.cpp, slot_scatter.cpp). The same network as the kernels'
// kv_transpose8x16 (emit/cpu.cpp): the patterns are bare loops of the same arithmetic.
#include <immintrin.h>

#include <cstddef>

namespace kvlayout::bench {

// c[b] = element b of rows r[0..7] (low lane) and element b + 8 of them (high lane): two 8 x 8 transposes
// of 16-bit elements, one in each 128-bit lane.
__attribute__((target("avx2"))) inline void transpose8x16(const __m256i r[8], __m256i c[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      u[4 * i + 2 * j] = _mm256_unpacklo_epi32(t[4 * i + j], t[4 * i + j + 2]);
      u[4 * i + 2 * j + 1] = _mm256_unpackhi_epi32(t[4 * i + j], t[4 * i + j + 2]);
    }
  for (int i = 0; i < 4; ++i) {
    c[2 * i] = _mm256_unpacklo_epi64(u[i], u[i + 4]);
    c[2 * i + 1] = _mm256_unpackhi_epi64(u[i], u[i + 4]);
  }
}

// transpose8x16 of the 8 rows of 16 elements starting `row` bytes apart at `from`.
__attribute__((target("avx2"))) inline void transpose8x16(const char* from, std::size_t row, __m256i c[8]) {
  __m256i r[8];
  for (int a = 0; a < 8; ++a) r[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + a * row));
  transpose8x16(r, c);
}

// The low 128-bit lanes of a and b (half 0) or their high lanes (half 1). The lane selector of
// _mm256_permute2x128_si256 must be a constant expression: GCC folds `half ? 0x31 : 0x20` after inlining,
// clang does not, so each selector is written out.
__attribute__((target("avx2"))) inline __m256i lane_half(__m256i a, __m256i b, int half) {
  return half == 0 ? _mm256_permute2x128_si256(a, b, 0x20) : _mm256_permute2x128_si256(a, b, 0x31);
}

// The 64-byte line at `line`: `low` then `high`, streamed (Stream: `line` on a line) or stored.
template <bool Stream>
__attribute__((target("avx2"))) inline void put_line(char* line, __m256i low, __m256i high) {
  if (Stream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(line), low);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(line + 32), high);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(line), low);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(line + 32), high);
  }
}

// to[b] + to_at gets element b of from[0..31] + from_at, for b < 16 x Pairs: a 32 x 32 block (Pairs 2) or
// a 32 x 16 one (Pairs 1) of 16-bit elements whose rows are placed one by one (gathered), each target row
// receiving one 64-byte line, streamed (Stream: to[b] + to_at on a line) or stored. As the kernels'
// kv_transpose_rows_block.
template <bool Stream, int Pairs = 2>
__attribute__((target("avx2"))) inline void transpose_rows32(char* const* to, std::size_t to_at, const char* const* from, std::size_t from_at) {
  for (int pair = 0; pair < Pairs; ++pair) {  // target rows 16 pair + b and 16 pair + 8 + b
    __m256i c[4][8];
    for (int q = 0; q < 4; ++q) {  // source rows 8 q + a
      __m256i r[8];
      for (int a = 0; a < 8; ++a) r[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[8 * q + a] + from_at + 32 * pair));
      transpose8x16(r, c[q]);
    }
    for (int b = 0; b < 8; ++b)
      for (int half = 0; half < 2; ++half) {
        put_line<Stream>(to[16 * pair + 8 * half + b] + to_at, lane_half(c[0][b], c[1][b], half), lane_half(c[2][b], c[3][b], half));
      }
  }
}

// transpose_rows32's 32 x 32 block (Pairs 2) in AVX-512 registers, as the kernels'
// kv_transpose_rows32_avx512 (emit/cpu.cpp): each source row's line in one load, the 128-bit lanes of four
// rows a group apart transposed first, then the 8 x 8 unpack network within the lanes, one 64-byte store
// per target line. GCC 12's AVX-512 unpack intrinsics trip -Wuninitialized on their own undefined source.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <bool Stream>
__attribute__((target("avx512f,avx512bw"))) inline void transpose_rows32_avx512(char* const* to, std::size_t to_at, const char* const* from,
                                                                              std::size_t from_at) {
  __m512i d[4][8];  // d[lane][a]: 128-bit lane g holds that lane of source row 8 g + a
  for (int a = 0; a < 8; ++a) {
    const __m512i r0 = _mm512_loadu_si512(from[a] + from_at), r1 = _mm512_loadu_si512(from[8 + a] + from_at);
    const __m512i r2 = _mm512_loadu_si512(from[16 + a] + from_at), r3 = _mm512_loadu_si512(from[24 + a] + from_at);
    const __m512i t0 = _mm512_shuffle_i64x2(r0, r1, 0x44), t1 = _mm512_shuffle_i64x2(r0, r1, 0xEE);
    const __m512i t2 = _mm512_shuffle_i64x2(r2, r3, 0x44), t3 = _mm512_shuffle_i64x2(r2, r3, 0xEE);
    d[0][a] = _mm512_shuffle_i64x2(t0, t2, 0x88);
    d[1][a] = _mm512_shuffle_i64x2(t0, t2, 0xDD);
    d[2][a] = _mm512_shuffle_i64x2(t1, t3, 0x88);
    d[3][a] = _mm512_shuffle_i64x2(t1, t3, 0xDD);
  }
  for (int lane = 0; lane < 4; ++lane) {  // target rows 8 lane .. 8 lane + 7
    __m512i t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_unpacklo_epi16(d[lane][2 * i], d[lane][2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_epi16(d[lane][2 * i], d[lane][2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        u[4 * i + 2 * j] = _mm512_unpacklo_epi32(t[4 * i + j], t[4 * i + j + 2]);
        u[4 * i + 2 * j + 1] = _mm512_unpackhi_epi32(t[4 * i + j], t[4 * i + j + 2]);
      }
    for (int i = 0; i < 4; ++i)
      for (int half = 0; half < 2; ++half) {
        const __m512i words = half == 0 ? _mm512_unpacklo_epi64(u[i], u[i + 4]) : _mm512_unpackhi_epi64(u[i], u[i + 4]);
        char* line = to[8 * lane + 2 * i + half] + to_at;
        if (Stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(line), words);
        else _mm512_storeu_si512(line, words);
      }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace kvlayout::bench

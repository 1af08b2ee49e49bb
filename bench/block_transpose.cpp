#include "block_transpose.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include "parallel_parts.hpp"
#include "stream_copy.hpp"
#include "transpose16.hpp"

namespace kvlayout::bench {

namespace {

constexpr std::size_t kRowBytes = kBlockColumns * 2;  // a token's row in the token-major block
constexpr std::size_t kTokenBytes = kBlockTokens * 2;  // a column's 16 tokens in the token-fastest block

// Step g of a block out of token-fastest: columns 32 g .. 32 g + 31 (1 KiB of the source, on page g / 4)
// transposed into 64 bytes of each of the 16 token rows `to` (each token's 64 bytes one whole target line),
// streamed or stored.
template <bool Stream>
__attribute__((target("avx2"))) inline void out_of_token_fastest_step(char* const* to, const char* from, std::size_t g) {
  __m256i c[4][8];
  for (int q = 0; q < 4; ++q) transpose8x16(from + (32 * g + 8 * q) * kTokenBytes, kTokenBytes, c[q]);
  for (int b = 0; b < 8; ++b)
    for (int half = 0; half < 2; ++half) {  // token b (low lanes), then b + 8 (high lanes)
      put_line<Stream>(to[b + 8 * half] + 64 * g, lane_half(c[0][b], c[1][b], half), lane_half(c[2][b], c[3][b], half));
    }
}

// Packs: the block as [128 packs][16 tokens] of 16-byte units on the token-fastest side, [16 tokens][128
// packs] on the other. Step q moves packs 4 q .. 4 q + 3: a kilobyte of the token-fastest side, one 64-byte
// line of each token's row; two packs of two tokens at a time (two 32-byte loads, two lane permutes).
constexpr std::size_t kPackBytes = 16, kPacks = kRowBytes / kPackBytes;

// Step q of a block of packs out of token-fastest: packs 4 q .. 4 q + 3 (a kilobyte of the source) into one
// 64-byte line of each of the 16 token rows `to`, streamed or stored.
template <bool Stream>
__attribute__((target("avx2"))) inline void packs_out_of_token_fastest_step(char* const* to, const char* from, std::size_t q) {
  for (std::size_t t = 0; t < kBlockTokens; t += 2) {
    __m256i line[2][2];  // [token t or t + 1][packs 4 q, 4 q + 1 or 4 q + 2, 4 q + 3]
    for (std::size_t pair = 0; pair < 2; ++pair) {
      const std::size_t p = 4 * q + 2 * pair;
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + (p * kBlockTokens + t) * kPackBytes));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + ((p + 1) * kBlockTokens + t) * kPackBytes));
      line[0][pair] = lane_half(a, b, 0);
      line[1][pair] = lane_half(a, b, 1);
    }
    for (std::size_t u = 0; u < 2; ++u) put_line<Stream>(to[t + u] + 64 * q, line[u][0], line[u][1]);
  }
}

// One step of a block out of token-fastest, of elements or of packs: a kilobyte of the source into a line
// of each token's row.
template <bool Stream>
__attribute__((target("avx2"))) inline void out_of_token_fastest_any_step(char* const* to, const char* from, std::size_t step, TransposeUnit unit) {
  if (unit == TransposeUnit::Pack16) packs_out_of_token_fastest_step<Stream>(to, from, step);
  else out_of_token_fastest_step<Stream>(to, from, step);
}

// Step `step` of a block out of token-fastest takes columns 32 g .. 32 g + 31 for this g: the source's 8
// pages read four at a time, a kilobyte of each in turn (as the kernels' page_interleaved_step). One page
// after another read 0.68x of memcpy at one thread, this 0.76x (Intel Xeon, streamed straight).
constexpr std::size_t page_interleaved(std::size_t step) { return (step / 16) * 16 + (step % 4) * 4 + (step / 4) % 4; }

// [1024][16] -> 16 token rows of 1024, streamed straight into the target, pages four at a time.
__attribute__((target("avx2"))) void out_of_token_fastest_avx2(char* const* to, const char* from, TransposeUnit unit) {
  for (std::size_t step = 0; step < kBlockColumns / 32; ++step) out_of_token_fastest_any_step<true>(to, from, page_interleaved(step), unit);
}

// [1024][16] -> [16][1024] staged, as the kernels' staged boxes (emit/cpu.cpp's print_copy): the block is
// transposed with ordinary stores into `stage` (it stays in the first-level cache), pages four at a time,
// each step's kilobyte of the next block (`next`) prefetched beside it, while the block staged before it
// (`staged`, bound for the 16 token rows `pending` unless that is null) is streamed out a kilobyte per step. Measured on an
// AMD EPYC (Zen 3, KVM), the sweep's pattern rows in two runs, 256 MiB, against memcpy, 1 / 2 threads,
// before the pages four at a time and the prefetch: streamed straight 0.37-0.39x / 0.45-0.47x, staged
// 0.59-0.64x / 0.54-0.76x. On an Intel Xeon, one thread, three runs of a copy of this loop: 0.66-0.73x
// with the pages in order, 0.72-0.79x as now (streamed straight 0.63-0.67x).
__attribute__((target("avx2"))) void out_of_token_fastest_staged_avx2(char* stage, const char* from, const char* next, char* const* pending,
                                                                      const char* staged, TransposeUnit unit) {
  char* stage_rows[kBlockTokens];
  for (std::size_t t = 0; t < kBlockTokens; ++t) stage_rows[t] = stage + t * kRowBytes;
  constexpr std::size_t kHalfRow = kRowBytes / 2;  // a step's kilobyte streamed out: half a token's row
  for (std::size_t step = 0; step < kBlockColumns / 32; ++step) {
    const std::size_t g = page_interleaved(step);
    for (std::size_t line = 0; line < 1024; line += 64) __builtin_prefetch(next + 1024 * g + line, 0, 1);
    out_of_token_fastest_any_step<false>(stage_rows, from, g, unit);
    if (pending != nullptr) stream_copy_avx2(pending[step / 2] + kHalfRow * (step % 2), staged + kHalfRow * step, kHalfRow);
  }
}

// 16 token rows of 1024 -> [1024][16]: 32 columns (64 bytes of each token's row) at a time into 1 KiB of
// the target.
__attribute__((target("avx2"))) void into_token_fastest_avx2(char* to, const char* const* from) {
  for (std::size_t g = 0; g < kBlockColumns / 32; ++g)
    for (int h = 0; h < 2; ++h) {  // columns 32 g + 16 h ..
      __m256i r[2][8];             // tokens 0..7 / 8..15: [b] holds column 32 g + 16 h + b (low lane) and + 8 (high lane)
      for (int half = 0; half < 2; ++half) {
        __m256i rows[8];
        for (int a = 0; a < 8; ++a) rows[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[8 * half + a] + 64 * g + 32 * h));
        transpose8x16(rows, r[half]);
      }
      const __m256i* top = r[0];
      const __m256i* bottom = r[1];
      for (int b = 0; b < 8; ++b)
        for (int half = 0; half < 2; ++half) {
          char* column = to + (32 * g + 16 * h + 8 * half + b) * kTokenBytes;
          _mm256_stream_si256(reinterpret_cast<__m256i*>(column), lane_half(top[b], bottom[b], half));
        }
    }
}

// 16 token rows of 128 packs -> [128 packs][16 tokens], a kilobyte of the target per step, streamed: four
// packs of four tokens at a time, four 64-byte source lines in and four whole target lines out (as the
// kernels' four-by-four nests, kv_run_quads16). Two by two (half lines in and out) read 0.53-0.59x of
// memcpy at one thread on an Ice Lake-class Xeon (2026-12-06/07 sweeps), below the kernels' four-by-four
// nests that took its place in them (emit/run_pairs.hpp), which then read above it.
__attribute__((target("avx2"))) void packs_into_token_fastest_avx2(char* to, const char* const* from) {
  for (std::size_t p = 0; p < kPacks; p += 4)
    for (std::size_t t = 0; t < kBlockTokens; t += 4) {
      __m256i low[4], high[4];  // token t + i: packs p, p + 1 / p + 2, p + 3
      for (std::size_t i = 0; i < 4; ++i) {
        low[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[t + i] + p * kPackBytes));
        high[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[t + i] + p * kPackBytes + 32));
      }
      for (int j = 0; j < 4; ++j) {  // pack p + j's line: tokens t .. t + 3
        const __m256i* half = j < 2 ? low : high;
        char* line = to + ((p + static_cast<std::size_t>(j)) * kBlockTokens + t) * kPackBytes;
        _mm256_stream_si256(reinterpret_cast<__m256i*>(line), lane_half(half[0], half[1], j % 2));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(line + 32), lane_half(half[2], half[3], j % 2));
      }
    }
}

// Column c of token t, `unit` bytes: at c x unit in token t's row on the token-major side, at (c x 16 + t)
// x unit of the block on the token-fastest side. Out of token-fastest: `from` the block, `to_rows` the
// rows; into it: `from_rows` the rows, `to` the block.
void transpose_block_portable(char* to, char* const* to_rows, const char* from, const char* const* from_rows, TransposeDirection direction,
                              std::size_t unit) {
  const bool out = direction == TransposeDirection::OutOfTokenFastest;
  for (std::size_t t = 0; t < kBlockTokens; ++t)
    for (std::size_t c = 0; c < kRowBytes / unit; ++c) {
      const std::size_t token_fastest = (c * kBlockTokens + t) * unit;
      if (out) std::memcpy(to_rows[t] + c * unit, from + token_fastest, unit);
      else std::memcpy(to + token_fastest, from_rows[t] + c * unit, unit);
    }
}

}  // namespace

void transpose_blocks(char* to, const char* from, const std::vector<std::uint32_t>& from_order, const std::vector<std::uint32_t>& to_order,
                      TransposeDirection direction, int threads, TransposeWay way, TransposeUnit unit, const std::vector<std::uint32_t>* token_rows) {
  const bool avx2 = __builtin_cpu_supports("avx2");
  const std::size_t blocks = from_order.size();
  const bool out = direction == TransposeDirection::OutOfTokenFastest;
  auto part = [&](int p) {
    const std::size_t begin = blocks * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
    const std::size_t end = blocks * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads);
    alignas(64) static thread_local char stages[2][kTransposeBlockBytes];
    char* to_rows[kBlockTokens];           // block k's token rows out of token-fastest
    const char* from_rows[kBlockTokens];   // or into it
    char* pending[kBlockTokens];  // the token rows the block in stages[half ^ 1] goes to, not yet streamed out
    bool any_pending = false;
    int half = 0;
    for (std::size_t k = begin; k < end; ++k) {
      char* t = to + std::size_t{to_order[k]} * kTransposeBlockBytes;
      const char* f = from + std::size_t{from_order[k]} * kTransposeBlockBytes;
      // @post to_rows[r] (out of token-fastest) or from_rows[r] (into it) is token r's row: the block's own
      // rows, or the r-th of its scattered rows.
      for (std::size_t r = 0; r < kBlockTokens; ++r) {
        const std::size_t scattered = token_rows == nullptr ? 0 : std::size_t{(*token_rows)[kBlockTokens * k + r]} * kRowBytes;
        to_rows[r] = token_rows == nullptr ? t + r * kRowBytes : to + scattered;
        from_rows[r] = token_rows == nullptr ? f + r * kRowBytes : from + scattered;
      }
      if (!avx2) {
        transpose_block_portable(t, to_rows, f, from_rows, direction, unit == TransposeUnit::Pack16 ? kPackBytes : 2);
      } else if (unit == TransposeUnit::Pack16 && !out) {
        packs_into_token_fastest_avx2(t, from_rows);
      } else if (out && way == TransposeWay::Staged) {
        const char* next = k + 1 < end ? from + std::size_t{from_order[k + 1]} * kTransposeBlockBytes : f;
        out_of_token_fastest_staged_avx2(stages[half], f, next, any_pending ? pending : nullptr, stages[half ^ 1], unit);
        std::copy(to_rows, to_rows + kBlockTokens, pending);
        any_pending = true;
        half ^= 1;
      } else if (out) {
        out_of_token_fastest_avx2(to_rows, f, unit);
      } else {
        into_token_fastest_avx2(t, from_rows);
      }
    }
    if (any_pending)
      for (std::size_t r = 0; r < kBlockTokens; ++r) std::memcpy(pending[r], stages[half ^ 1] + r * kRowBytes, kRowBytes);
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace kvlayout::bench

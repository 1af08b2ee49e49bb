#include "row_transpose.hpp"

#include <immintrin.h>

#include <cstring>
#include <stdexcept>
#include "parallel_parts.hpp"
#include "stream_copy.hpp"
#include "transpose16.hpp"

namespace kvlayout::bench {

namespace {

constexpr std::size_t kTokenRowBytes = kChannels * 2, kChannelRowBytes = kContextTokens * 2;
constexpr std::size_t kBand = 256;  // the staged way's rows per band: 512-byte bursts, a 16 KiB stage

constexpr std::size_t kHeadChannels = 128, kInterleavedHeadBytes = 2 * kHeadChannels * 2;  // a head's K and V pieces

// One layer's rows: its 2048 token rows (in their pages), by cell (token[cells[t]] is token t's), and its
// 1024 channel rows; with K and V interleaved, its 2048 K rows by cell too.
struct LayerRows {
  std::vector<char*> token, channel, key;
  bool interleaved = false;
  // Where channel c (a multiple of 32: a block's first) lies in a token row.
  std::size_t channel_at(std::size_t c) const {
    return interleaved ? c / kHeadChannels * kInterleavedHeadBytes + kHeadChannels * 2 + c % kHeadChannels * 2 : c * 2;
  }
};

// Token row (cell) r's K pieces, each with its place in r's K row: copy(to, from) for each, into the K row
// when `into`. The one home of the K pieces' geometry, for the AVX2 and the portable moves.
template <class Copy>
[[gnu::always_inline]] inline void move_key_pieces(const LayerRows& rows, std::size_t r, bool into, Copy copy) {
  for (std::size_t h = 0; h < kChannels / kHeadChannels; ++h) {
    char* const piece = rows.token[r] + h * kInterleavedHeadBytes;
    char* const key = rows.key[r] + h * kHeadChannels * 2;
    if (into) copy(key, piece);
    else copy(piece, key);
  }
}

// The K pieces of token rows (cells) `first` .. `first + count - 1` copied between their token rows and K
// rows, streamed (AVX2): into the K rows when `into`.
__attribute__((target("avx2"))) void copy_key_pieces(const LayerRows& rows, std::size_t first, std::size_t count, bool into) {
  // The lambda takes the target too and move_key_pieces is inlined, so that the copy is inlined, not called
  // per piece.
  auto copy = [](char* to, const char* from) __attribute__((target("avx2"))) { stream_copy_avx2_fixed<kHeadChannels * 2>(to, from); };
  for (std::size_t r = first; r < first + count; ++r) move_key_pieces(rows, r, into, copy);
}

// A streamed 32 x 32 block transpose: transpose_rows32<true> (AVX2) or transpose_rows32_avx512<true>.
using BlockTranspose = void (*)(char* const*, std::size_t, const char* const*, std::size_t);

// Into channel rows, straight: 32 token rows at a time, read whole in 32 x 32 blocks, each channel row
// receiving one streamed line per block; the next 32 token rows prefetched a line at a time beside the
// blocks (the kernels' read_gathered_rows_whole with dense rows).
// With K and V interleaved, the 32 token rows' K pieces are copied first, in the same pass.
template <BlockTranspose Transpose>
void into_channel_rows_straight(const LayerRows& rows) {
  for (std::size_t t0 = 0; t0 < kContextTokens; t0 += 32) {
    if (rows.interleaved) copy_key_pieces(rows, t0, 32, true);
    for (std::size_t c0 = 0; c0 < kChannels; c0 += 32) {
      if (t0 + 32 < kContextTokens)
        for (std::size_t r = t0 + 32; r < t0 + 64; ++r) __builtin_prefetch(rows.token[r] + rows.channel_at(c0), 0, 1);
      Transpose(rows.channel.data() + c0, t0 * 2, rows.token.data() + t0, rows.channel_at(c0));
    }
  }
}

// Out of channel rows, straight: 32 channel rows at a time over all the tokens, each token row receiving
// one streamed line per block; the channel rows' next line prefetched (the kernels' gathered target rows).
// With K and V interleaved, the K pieces are written first, all the layer's tokens in one pass (the
// streamed writes of whole lines complete in any order).
template <BlockTranspose Transpose>
void out_of_channel_rows_straight(const LayerRows& rows) {
  if (rows.interleaved) copy_key_pieces(rows, 0, kContextTokens, false);
  for (std::size_t c0 = 0; c0 < kChannels; c0 += 32)
    for (std::size_t t0 = 0; t0 < kContextTokens; t0 += 32) {
      if (t0 + 32 < kContextTokens)
        for (std::size_t r = c0; r < c0 + 32; ++r) __builtin_prefetch(rows.channel[r] + (t0 + 32) * 2, 0, 1);
      Transpose(rows.token.data() + t0, rows.channel_at(c0), rows.channel.data() + c0, t0 * 2);
    }
}

// Staged, either way: per band of kBand rows read (`from`, along `across` bytes of each) and per 32 rows
// written (`to`, 64 bytes of the band's at a time), the band's 8 blocks transposed into the stage, then
// each target row written one burst of kBand elements. `read` and `written` are the two sides' row counts.
__attribute__((target("avx2"))) void staged(char* const* to, std::size_t written, const char* const* from, std::size_t read) {
  alignas(64) char stage[32 * kBand * 2];
  char* stage_rows[32];
  for (int b = 0; b < 32; ++b) stage_rows[b] = stage + b * kBand * 2;
  for (std::size_t band = 0; band < read; band += kBand)
    for (std::size_t w0 = 0; w0 < written; w0 += 32) {
      for (std::size_t a = 0; a < kBand; a += 32) transpose_rows32<false>(stage_rows, a * 2, from + band + a, w0 * 2);
      for (int b = 0; b < 32; ++b) stream_copy_avx2(to[w0 + b] + band * 2, stage_rows[b], kBand * 2);
    }
}

void layer_portable(const LayerRows& rows, RowTransposeDirection direction) {
  const bool into = direction == RowTransposeDirection::IntoChannelRows;
  for (std::size_t t = 0; t < kContextTokens; ++t) {
    for (std::size_t c = 0; c < kChannels; ++c) {
      char* const in_row = rows.token[t] + rows.channel_at(c - c % 32) + c % 32 * 2;
      if (into) std::memcpy(rows.channel[c] + t * 2, in_row, 2);
      else std::memcpy(in_row, rows.channel[c] + t * 2, 2);
    }
    if (rows.interleaved) move_key_pieces(rows, t, into, [](char* to, const char* from) { std::memcpy(to, from, kHeadChannels * 2); });
  }
}

}  // namespace

bool cpu_has_avx512bw() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }

void transpose_rows(char* to, const char* from, const std::vector<std::uint32_t>& paged_order, const std::vector<std::uint32_t>& cells,
                    RowTransposeDirection direction, int threads, RowTransposeWay way, PagedRows paged_rows) {
  if (way == RowTransposeWay::StraightAvx512 && !cpu_has_avx512bw()) throw std::invalid_argument("transpose_rows: this CPU has no AVX-512 BW");
  const bool interleaved = paged_rows == PagedRows::KeyValueInterleaved;
  if (way == RowTransposeWay::Staged && interleaved) throw std::invalid_argument("transpose_rows: no staged way with K and V interleaved");
  const std::size_t page_bytes = interleaved ? kInterleavedPageBytes : kPageBytes;
  const std::size_t token_row_bytes = interleaved ? 2 * kTokenRowBytes : kTokenRowBytes;
  const std::size_t layer_bytes = interleaved ? kInterleavedLayerBytes : kChannelRowsLayerBytes;
  const bool avx2 = __builtin_cpu_supports("avx2");
  const bool into = direction == RowTransposeDirection::IntoChannelRows;
  char* const paged = into ? const_cast<char*>(from) : to;  // read only where it is the source
  char* const channels = into ? to : const_cast<char*>(from);
  const std::size_t layers = paged_order.size() / kPagesPerLayer;
  auto part = [&](int p) {
    LayerRows rows{std::vector<char*>(kContextTokens), std::vector<char*>(kChannels), std::vector<char*>(interleaved ? kContextTokens : 0), interleaved};
    for (std::size_t l = layers * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
         l < layers * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads); ++l) {
      for (std::size_t t = 0; t < kContextTokens; ++t)
        rows.token[cells[t]] = paged + std::size_t{paged_order[l * kPagesPerLayer + t / kPageTokens]} * page_bytes + (t % kPageTokens) * token_row_bytes;
      for (std::size_t c = 0; c < kChannels; ++c) rows.channel[c] = channels + l * layer_bytes + c * kChannelRowBytes;
      for (std::size_t cell = 0; cell < rows.key.size(); ++cell) rows.key[cell] = channels + l * layer_bytes + kChannelRowsLayerBytes + cell * kTokenRowBytes;
      if (!avx2) layer_portable(rows, direction);
      else if (way == RowTransposeWay::Staged && into) staged(rows.channel.data(), kChannels, rows.token.data(), kContextTokens);
      else if (way == RowTransposeWay::Staged) staged(rows.token.data(), kContextTokens, rows.channel.data(), kChannels);
      else if (way == RowTransposeWay::StraightAvx512 && into) into_channel_rows_straight<transpose_rows32_avx512<true>>(rows);
      else if (way == RowTransposeWay::StraightAvx512) out_of_channel_rows_straight<transpose_rows32_avx512<true>>(rows);
      else if (into) into_channel_rows_straight<transpose_rows32<true>>(rows);
      else out_of_channel_rows_straight<transpose_rows32<true>>(rows);
    }
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace kvlayout::bench

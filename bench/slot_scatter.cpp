#include "slot_scatter.hpp"

#include <immintrin.h>

#include <cstring>

#include "parallel_parts.hpp"
#include "transpose16.hpp"

namespace kvlayout::bench {

namespace {

constexpr std::size_t kGroup = 32;                               // channels per slot row
constexpr std::size_t kSlotRowBytes = kGroup * 2;                // 64: one line
constexpr std::size_t kBoxBytes = kGroup * kPageTokens * 2;      // a group's 32 channels x 16 tokens in a page: 1 KiB
constexpr std::size_t kChannelRowBytes = kContextTokens * 2;     // 4 KiB

// One layer's rows: its pages by token block, its channel rows, and the slot rows by cell.
struct LayerRows {
  std::vector<char*> page, channel, slot;
};

// 16 tokens' slot rows (64 bytes, 32 channels each) gathered into a box of 32 channels x 16 tokens (32-byte
// rows), streamed: two 8 x 16 transposes per 16 channels.
__attribute__((target("avx2"))) void slot_rows_into_box(char* box, char* const* slot) {
  for (int pair = 0; pair < 2; ++pair) {  // channels 16 pair .. 16 pair + 15
    __m256i c[2][8];
    for (int q = 0; q < 2; ++q) {  // tokens 8 q .. 8 q + 7
      __m256i r[8];
      for (int a = 0; a < 8; ++a) r[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(slot[8 * q + a] + 32 * pair));
      transpose8x16(r, c[q]);
    }
    for (int b = 0; b < 8; ++b)
      for (int half = 0; half < 2; ++half)
        _mm256_stream_si256(reinterpret_cast<__m256i*>(box + (16 * pair + 8 * half + b) * 32), lane_half(c[0][b], c[1][b], half));
  }
}

__attribute__((target("avx2"))) void into_cells(const LayerRows& rows, const std::vector<std::uint32_t>& cells) {
  const char* box_rows[kGroup];
  for (std::size_t g = 0; g < kChannels; g += kGroup) {
    for (std::size_t k = 0; k < kPagesPerLayer; ++k) {
      const char* box = rows.page[k] + g * kPageTokens * 2;
      if (k + 1 < kPagesPerLayer)
        for (std::size_t line = 0; line < kBoxBytes; line += 64) __builtin_prefetch(rows.page[k + 1] + g * kPageTokens * 2 + line, 0, 1);
      for (std::size_t c = 0; c < kGroup; ++c) box_rows[c] = box + c * kPageTokens * 2;
      char* token_slots[kPageTokens];
      for (std::size_t i = 0; i < kPageTokens; ++i) token_slots[i] = rows.slot[cells[k * kPageTokens + i]];
      transpose_rows32<false, 1>(token_slots, 0, box_rows, 0);
    }
    for (std::size_t c0 = 0; c0 < kContextTokens; c0 += 32) transpose_rows32<true>(rows.channel.data() + g, c0 * 2, rows.slot.data() + c0, 0);
  }
}

__attribute__((target("avx2"))) void out_of_cells(const LayerRows& rows, const std::vector<std::uint32_t>& cells) {
  for (std::size_t g = 0; g < kChannels; g += kGroup) {
    for (std::size_t c0 = 0; c0 < kContextTokens; c0 += 32) {
      if (c0 + 32 < kContextTokens)
        for (std::size_t r = g; r < g + kGroup; ++r) __builtin_prefetch(rows.channel[r] + (c0 + 32) * 2, 0, 1);
      transpose_rows32<false>(rows.slot.data() + c0, 0, rows.channel.data() + g, c0 * 2);
    }
    for (std::size_t k = 0; k < kPagesPerLayer; ++k) {
      char* token_slots[kPageTokens];
      for (std::size_t i = 0; i < kPageTokens; ++i) token_slots[i] = rows.slot[cells[k * kPageTokens + i]];
      slot_rows_into_box(rows.page[k] + g * kPageTokens * 2, token_slots);
    }
  }
}

void layer_portable(const LayerRows& rows, const std::vector<std::uint32_t>& cells, ScatterDirection direction) {
  for (std::size_t t = 0; t < kContextTokens; ++t)
    for (std::size_t c = 0; c < kChannels; ++c) {
      char* legacy = rows.page[t / kPageTokens] + (c * kPageTokens + t % kPageTokens) * 2;
      char* cell = rows.channel[c] + std::size_t{cells[t]} * 2;
      if (direction == ScatterDirection::IntoSlots) std::memcpy(cell, legacy, 2);
      else std::memcpy(legacy, cell, 2);
    }
}

}  // namespace

void scatter_through_slot_rows(char* to, const char* from, const std::vector<std::uint32_t>& paged_order, const std::vector<std::uint32_t>& cells,
                               ScatterDirection direction, int threads) {
  const bool avx2 = __builtin_cpu_supports("avx2");
  const bool into = direction == ScatterDirection::IntoSlots;
  char* const paged = into ? const_cast<char*>(from) : to;  // read only where it is the source
  char* const channels = into ? to : const_cast<char*>(from);
  const std::size_t layers = paged_order.size() / kPagesPerLayer;
  auto part = [&](int p) {
    std::vector<char> buffer(kContextTokens * kSlotRowBytes + 64);  // the slot rows, from its first line on
    char* const slots = buffer.data() + (64 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 64) % 64;
    LayerRows rows{std::vector<char*>(kPagesPerLayer), std::vector<char*>(kChannels), std::vector<char*>(kContextTokens)};
    for (std::size_t c = 0; c < kContextTokens; ++c) rows.slot[c] = slots + c * kSlotRowBytes;
    for (std::size_t l = layers * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
         l < layers * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads); ++l) {
      for (std::size_t k = 0; k < kPagesPerLayer; ++k) rows.page[k] = paged + std::size_t{paged_order[l * kPagesPerLayer + k]} * kPageBytes;
      for (std::size_t c = 0; c < kChannels; ++c) rows.channel[c] = channels + l * kChannelRowsLayerBytes + c * kChannelRowBytes;
      if (!avx2) layer_portable(rows, cells, direction);
      else if (into) into_cells(rows, cells);
      else out_of_cells(rows, cells);
    }
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace kvlayout::bench

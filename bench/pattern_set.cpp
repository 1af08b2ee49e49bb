#include "pattern_set.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>

#include "access_replay.hpp"
#include "block_transpose.hpp"
#include "element_scatter.hpp"
#include "move_kind.hpp"
#include "parallel_parts.hpp"
#include "row_transpose.hpp"
#include "slot_scatter.hpp"
#include "stream_copy.hpp"

namespace kvlayout::bench {
namespace {

constexpr std::size_t kChunkBytes[3] = {256, 2048, 32768};

// `count` units in a random order within each window of 4 MiB (a layer's K or V tensor at the sweep's size:
// block tables are per layer), on the source side and, independently, on the target side.
std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>> orders_within_4_mib(std::size_t count, std::size_t unit_bytes) {
  std::vector<std::uint32_t> from_order(count), to_order(count);
  for (std::size_t i = 0; i < count; ++i) from_order[i] = to_order[i] = static_cast<std::uint32_t>(i);
  std::mt19937_64 rng(unit_bytes);
  const std::size_t window = (std::size_t{4} << 20) / unit_bytes;
  for (std::size_t w = 0; w < count; w += window) {
    const auto end = static_cast<std::ptrdiff_t>(std::min(count, w + window));
    std::shuffle(from_order.begin() + static_cast<std::ptrdiff_t>(w), from_order.begin() + end, rng);
    std::shuffle(to_order.begin() + static_cast<std::ptrdiff_t>(w), to_order.begin() + end, rng);
  }
  return {std::move(from_order), std::move(to_order)};
}

// The access pattern's own ceiling: the same bytes copied in chunks of `chunk` bytes, taken in a random
// order within each 4 MiB window on both sides (as random per-layer block tables place them). Each chunk
// is streamed (AVX2 where the CPU has it) with no index arithmetic at all, the chunks 16 KiB ahead
// prefetched or not (`prefetch`), so a pair whose runs are such chunks should not expect to beat the
// better of the two.
void random_chunk_copy(char* to, const char* from, std::size_t bytes, std::size_t chunk, const std::vector<std::uint32_t>& from_order,
                       const std::vector<std::uint32_t>& to_order, int threads, bool prefetch) {
  const std::size_t chunks = bytes / chunk;
  const bool avx2 = __builtin_cpu_supports("avx2");
  auto part = [&](int p) {
    const std::size_t begin = chunks * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
    const std::size_t end = chunks * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads);
    const std::size_t ahead = std::max<std::size_t>(1, kPrefetchAheadBytes / chunk);  // chunks
    for (std::size_t c = begin; c < end; ++c) {
      const char* f = from + from_order[c] * chunk;
      if (prefetch && c + ahead < end) prefetch_span(from + from_order[c + ahead] * chunk, chunk);
      stream_copy(to + to_order[c] * chunk, f, chunk, avx2);
    }
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace

std::string ceiling_key(const std::string& kind, const std::string& turn) { return turn.empty() ? kind : kind + " (" + turn + ")"; }

PatternSet::PatternSet(std::size_t bytes) : bytes_(bytes) {
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t chunk = kChunkBytes[i];
    std::tie(chunk_from_[i], chunk_to_[i]) = orders_within_4_mib(bytes / chunk, chunk);
    // Prefetched and not: on an AMD EPYC the kernels' runs of 1 KiB or more gained from dropping their
    // prefetch (emit/cpu.cpp's kv_long_prefetches_wanted), so the pattern is timed both ways.
    for (bool prefetch : {true, false}) {
      char title[112];
      std::snprintf(title, sizeof title, "%6zu-byte chunks, random within 4 MiB, both sides, %s", chunk, prefetch ? "prefetched" : "not prefetched");
      rows_.push_back({{{"chunk_bytes", chunk}, {"prefetched", prefetch}}, title, {}, bytes, [this, i, prefetch](char* to, const char* from, int threads) {
                         random_chunk_copy(to, from, bytes_, kChunkBytes[i], chunk_from_[i], chunk_to_[i], threads, prefetch);
                       }});
    }
  }
  // The tile transposes' pattern (block_transpose.hpp): whole 32 KiB blocks transposed, each way; out of
  // token-fastest both streamed and staged (which is better depends on the CPU). The same blocks of 16-byte
  // packs (vLLM's legacy key cache, [128 packs][16 tokens], against [16 tokens][128 packs]). And both with
  // the token-major side's 16 rows of each block placed one by one, each at a random 2 KiB row of the same
  // 4 MiB (the legacy cache against a slot pool, whose slot table places each token's row: SGLang's token
  // pool, llama.cpp's cells), which serve the transposes of gathered rows that turn one way and their
  // packs: a pattern writing whole blocks runs at a pace no kernel writing rows one by one is held to.
  std::tie(block_from_, block_to_) = orders_within_4_mib(bytes / kTransposeBlockBytes, kTransposeBlockBytes);
  token_rows_ = orders_within_4_mib(bytes / (kTransposeBlockBytes / kBlockTokens), kTransposeBlockBytes / kBlockTokens).second;
  struct BlockTranspose {
    TransposeDirection direction;
    TransposeWay way;
    const char* name;
  };
  const BlockTranspose blocks[] = {{TransposeDirection::OutOfTokenFastest, TransposeWay::Streamed, kOutOfTokenFastest},
                                   {TransposeDirection::OutOfTokenFastest, TransposeWay::Staged, kOutOfTokenFastest},
                                   {TransposeDirection::IntoTokenFastest, TransposeWay::Streamed, kIntoTokenFastest}};
  for (const TransposeUnit unit : {TransposeUnit::Element, TransposeUnit::Pack16})
    for (const bool scattered : {false, true})
      for (const BlockTranspose& b : blocks) {
        const bool packs = unit == TransposeUnit::Pack16;
        const char* way = b.way == TransposeWay::Staged ? "staged" : "streamed";
        spec::Json descriptor = {{"transpose", b.name}, {"way", way}, {"block_bytes", kTransposeBlockBytes}};
        if (packs) descriptor["unit"] = "16-byte packs";
        if (scattered) descriptor["token_rows"] = "one by one";
        std::vector<std::string> keys;
        if (packs) keys = {ceiling_key(scattered ? kGatheredPacksKey : kPacksKey, b.name)};
        else if (scattered) keys = {ceiling_key(kGatheredRowsKind, b.name)};
        else keys = {kTransposeKind, ceiling_key(kTransposeKind, b.name), kGatheredRowsKind};
        const std::string title = std::string("32 KiB blocks ") + (packs ? "of 16-byte packs " : "") + "transposed " + b.name + ", " + way +
                                  (scattered ? ", token rows one by one" : "") + ", random within 4 MiB, both sides";
        rows_.push_back({descriptor, title, keys, bytes, [this, b, unit, scattered](char* to, const char* from, int threads) {
                           transpose_blocks(to, from, block_from_, block_to_, b.direction, threads, b.way, unit, scattered ? &token_rows_ : nullptr);
                         }});
      }
  // The gathered-row transposes' pattern (row_transpose.hpp): llama.cpp's transposed V, a layer per 4 MiB
  // (the block transpose's order of 32 KiB units is a random block table per layer), each way, straight as
  // the kernels write it and staged (which is better depends on the CPU). llama.cpp's cells as the sweep's
  // tables place them: a random permutation of the tokens. The same over pages holding each token's K and
  // V head by head (vLLM's packed K/V caches, LMCache's packed objects: move_kind's "K and V interleaved"),
  // the K carried to or from its own rows in the same pass, as a pair moves both; straight only (the staged
  // way, slower here on every CPU measured, has no such variant). Only the V rows serve the generic key.
  const std::size_t layers = bytes / kChannelRowsLayerBytes;
  paged_order_.assign(block_from_.begin(), block_from_.begin() + static_cast<std::ptrdiff_t>(std::min(block_from_.size(), layers * kPagesPerLayer)));
  const std::size_t interleaved_layers = bytes / kInterleavedLayerBytes;
  interleaved_order_ = orders_within_4_mib(bytes / kInterleavedPageBytes, kInterleavedPageBytes).first;
  interleaved_order_.resize(std::min(interleaved_order_.size(), interleaved_layers * kPagesPerLayer));
  cells_.resize(kContextTokens);
  std::iota(cells_.begin(), cells_.end(), 0u);
  std::shuffle(cells_.begin(), cells_.end(), std::mt19937_64(kContextTokens));
  struct PagedGeometry {
    PagedRows paged_rows;
    const char* turn;  // the turn's words before "source rows gathered" / "target rows gathered"
    std::size_t layers, layer_bytes;
    const std::vector<std::uint32_t>* order;
    const char* moved;  // the title's words before "from" / "into"
    const char* pages;  // and after them
  };
  const PagedGeometry geometries[] = {
      {PagedRows::ValueRows, kWholeLinesTurn, layers, kChannelRowsLayerBytes, &paged_order_, "llama.cpp's V rows (4 MiB layers, random cells) transposed ",
       " random 32 KiB pages, "},
      {PagedRows::KeyValueInterleaved, kInterleavedTurn, interleaved_layers, kInterleavedLayerBytes, &interleaved_order_,
       "llama.cpp's V and K rows (8 MiB layers, random cells) ", " random 64 KiB pages of K and V interleaved by head, "}};
  for (const PagedGeometry& g : geometries)
    for (const RowTransposeDirection direction : {RowTransposeDirection::IntoChannelRows, RowTransposeDirection::OutOfChannelRows})
      for (const RowTransposeWay way : {RowTransposeWay::Straight, RowTransposeWay::Staged, RowTransposeWay::StraightAvx512}) {
        const bool value_rows = g.paged_rows == PagedRows::ValueRows;
        if (g.layers == 0) break;
        if ((way == RowTransposeWay::StraightAvx512 && !cpu_has_avx512bw()) || (way == RowTransposeWay::Staged && !value_rows)) continue;
        const char* way_name = way == RowTransposeWay::Staged ? "staged" : way == RowTransposeWay::StraightAvx512 ? "straight, AVX-512" : "straight";
        const bool into = direction == RowTransposeDirection::IntoChannelRows;
        const std::string name = std::string(g.turn) + (into ? "source rows gathered" : "target rows gathered");
        spec::Json descriptor = {{"gathered_rows", name}, {"way", way_name}, {"layer_bytes", g.layer_bytes}};
        std::vector<std::string> keys = {ceiling_key(kGatheredRowsKind, name)};
        if (value_rows) keys.insert(keys.begin(), kGatheredRowsKind);
        else descriptor["paged_rows"] = "K and V interleaved";
        rows_.push_back({descriptor, g.moved + std::string(into ? "from" : "into") + g.pages + way_name, keys, g.layers * g.layer_bytes,
                         [this, order = g.order, paged_rows = g.paged_rows, direction, way](char* to, const char* from, int threads) {
                           transpose_rows(to, from, *order, cells_, direction, threads, way, paged_rows);
                         }});
      }
  // The element-by-element moves' pattern (element_scatter.hpp): rows of 2048 cells permuted, each way.
  slots_.resize(kScatterRowElements);
  std::iota(slots_.begin(), slots_.end(), 0u);
  std::shuffle(slots_.begin(), slots_.end(), std::mt19937_64(kScatterRowBytes));
  for (auto [direction, name] : {std::pair{ScatterDirection::IntoSlots, "into slots"}, std::pair{ScatterDirection::OutOfSlots, "out of slots"}})
    rows_.push_back({{{"scatter", name}, {"row_bytes", kScatterRowBytes}},
                     std::string("4 KiB rows of 2-byte elements permuted ") + name + ", rows in order", {kElementByElementKind}, bytes,
                     [this, direction = direction](char* to, const char* from, int threads) {
                       scatter_rows(to, from, bytes_ / kScatterRowBytes, slots_, direction, threads);
                     }});
  // The same moves staged through slot rows (slot_scatter.hpp), as the kernels move every cell of
  // llama.cpp's transposed V from and into vLLM's legacy one: the element-by-element pairs' ceiling is the
  // better of the two ways.
  for (auto [direction, name] : {std::pair{ScatterDirection::IntoSlots, "into slots"}, std::pair{ScatterDirection::OutOfSlots, "out of slots"}}) {
    if (layers == 0) break;
    rows_.push_back({{{"scatter", name}, {"way", "staged through slot rows"}, {"layer_bytes", kChannelRowsLayerBytes}},
                     std::string("legacy V pages (4 MiB layers, random cells) ") + name + ", staged through 64-byte slot rows",
                     {kElementByElementKind}, layers * kChannelRowsLayerBytes, [this, direction = direction](char* to, const char* from, int threads) {
                       scatter_through_slot_rows(to, from, paged_order_, cells_, direction, threads);
                     }});
  }
}

std::vector<std::size_t> PatternSet::serving(const std::string& key) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (std::find(rows_[i].keys.begin(), rows_[i].keys.end(), key) != rows_[i].keys.end()) out.push_back(i);
  return out;
}

}  // namespace kvlayout::bench

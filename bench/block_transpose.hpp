#pragma once
// The transposing pattern's own bandwidth: whole blocks of 16-bit elements transposed by a bare loop (no
// index arithmetic past the block's, no tables, streaming stores), the blocks taken in a random order on
// both sides as random block tables place them. The sweep's tile transposes are this move inside each
// block (vLLM's legacy token-fastest value cache, a block's [head][dim][16 tokens], against a token-major
// block's [16 tokens][head][dim]: 32 KiB of llama-3.1-8b each), so a pair of them should not expect to
// beat it by much: kvlayout_bench_sweep measures it beside memcpy and holds the tile transposes against it
// (RooflineTally in relayout_sweep.cpp says when one counts as bound by it). Like the runs' replay
// (access_replay.hpp), it is the best bare code at hand, not a proof of a ceiling.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlayout::bench {

// A block: a vLLM block's 16 tokens by llama-3.1-8b's 8 heads x 128 dims, 2-byte elements (32 KiB).
constexpr std::size_t kBlockTokens = 16, kBlockColumns = 1024;
constexpr std::size_t kTransposeBlockBytes = kBlockTokens * kBlockColumns * 2;

enum class TransposeDirection {
  OutOfTokenFastest,  // from [1024 columns][16 tokens] to [16 tokens][1024 columns]
  IntoTokenFastest,   // from [16 tokens][1024 columns] to [1024 columns][16 tokens]
};

// How the blocks out of token-fastest are written (the block transpose pattern is the better of the two;
// which one wins depends on the CPU). Streamed: each step's 64-byte lines streamed straight to the target,
// the source's pages read four at a time. Staged: as the kernels' staged boxes, each block transposed into
// a buffer in the first-level cache with ordinary stores, its pages four at a time and the next block's
// same kilobyte prefetched beside each step, and streamed out while the next is transposed.
// The blocks into token-fastest write a whole kilobyte of their target per step, and are always streamed.
enum class TransposeWay { Streamed, Staged };

// What is transposed: 2-byte elements (vLLM's legacy value cache: a column is one dim), or 16-byte packs
// of 8 elements (its key cache, [head][dim / 8][16 tokens][8]: a column is one pack, 128 of them per
// token). Packs take the same ways as elements, a step being a kilobyte of the token-fastest side either way.
enum class TransposeUnit { Element, Pack16 };

// Block k of the move reads `from` at block from_order[k] and writes `to` at block to_order[k], the blocks
// split evenly across `threads`. With `token_rows`, the token-major side's 16 rows of block k lie apart
// instead, token t's at 2 KiB row (*token_rows)[16 k + t] (vLLM's legacy cache against a slot pool, whose
// token rows the slot table places one by one: move_kind's "transpose, gathered rows" out of or into
// token-fastest); that side's block order is then unused. AVX2 where the CPU has it (8 x 16 unpack networks, whole 64-byte target
// lines streamed, as the kernels' kv_transpose_lines16 / kv_transpose_columns16), element by element
// otherwise.
// @pre from and to 64-byte aligned; from_order and to_order of equal length, their entries in range;
// token_rows, if given, holds 16 rows per block, each in range.
void transpose_blocks(char* to, const char* from, const std::vector<std::uint32_t>& from_order, const std::vector<std::uint32_t>& to_order,
                      TransposeDirection direction, int threads, TransposeWay way = TransposeWay::Streamed,
                      TransposeUnit unit = TransposeUnit::Element, const std::vector<std::uint32_t>* token_rows = nullptr);

}  // namespace kvlayout::bench

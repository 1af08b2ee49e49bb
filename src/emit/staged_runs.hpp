#pragma once
// A block of paired 16-byte runs moved through a buffer on the stack. Where a cell's innermost loops move
// one contiguous box of the source to one contiguous box of the target (vLLM's legacy key cache, a block's
// x-packs `[head, dim / 8, slot, 8]`, into a token-major block `[slot, head, dim]`), the runs are copied
// into a buffer in the source's order, with ordinary stores that stay in L1, reading the box's four
// quarters at once (four page streams, which the hardware follows), and the buffer is then streamed to the
// target as one sequential run. The paired nest (run_pairs.hpp) reads each source line in visits a whole
// sub-nest apart when a loop lies between its two paired loops: with the pack index innermost and the
// heads between, a line's four slots come back after every head's packs.
// Measured on vllm-paged-legacy -> vllm-flash-nhd's key move alone (one process, one thread, 256 MiB,
// GiB/s over the pair's bytes): paired 12.1-12.3 -> staged 14.5-14.6 (the source read in one stream
// 12.8-13.0). Where no loop lies between the paired ones the buffer lost, so such nests stay paired: into
// the legacy cache (vllm-flash-nhd -> vllm-paged-legacy's key move 17.7-18.0 -> 14.9-15.6; flashinfer-hnd
// -> vllm-paged-legacy 7.6-8.2 -> 7.2-7.3 for the pair), and out of it into head-major blocks
// (vllm-paged-legacy -> trtllm-pool 7.6-7.7 -> 6.3, -> hf-dynamic 7.8-8.1 -> 6.4-6.5 for the pair).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

struct StagedRuns {
  std::size_t level = 0;         // the box's loops are cell.loops[level..]
  std::vector<int> source_order;  // those loops' modes, largest source stride first
  std::int64_t bytes = 0;        // the box, in either layout
};

// The largest box ending at the innermost loop, starting at `first_level` or below, that is staged, or
// nothing. Its loops are of fixed extent and place nothing through a table, an inverted slot or a tensor
// instance; with the run they tile one contiguous span of at most kMostStagedBytes in each layout (strides
// positive, each the product of the smaller ones' extents); the source's outermost loop divides into four
// quarters; a bound-checked coordinate's digits in the box are its lowest ones (checked once for the whole
// box). The box's runs pair (run_pairs_level) with a loop between the paired ones.
// @pre a move without conversion; source_bytes is the element size.
// @post level >= first_level, source_order a permutation of cell.loops[level..], bytes <= kMostStagedBytes.
std::optional<StagedRuns> staged_runs(const Cell& cell, int source_bytes, std::size_t first_level);

// The largest box staged: the buffer beside the source lines being read stays in a 48 KiB first-level
// cache (measured at 32 KiB only: a vLLM block of 16 slots of 8 heads of 128 bf16).
constexpr std::int64_t kMostStagedBytes = std::int64_t{32} << 10;

}  // namespace kvlayout::emit

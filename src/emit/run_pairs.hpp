#pragma once
// 16-byte runs moved two by two along two loops. Where a cell's run is 16 bytes (vLLM's legacy key cache
// holds a head's dims in x-packs of 8 bf16, `[block, head, dim / 8, slot, 8]`), the loop that continues the
// run in the target is innermost and another loop continues it in the source, two runs of the outer loop
// are one 32-byte load and two of the innermost one 32-byte store: four runs become a 2 x 2 transpose of
// 16-byte elements (the CPU printer's kv_run_pairs16), half the loads and stores of one run at a time.
// Measured on vllm-paged-legacy -> vllm-flash-nhd's key move alone (one thread, 256 MiB, ratio over the
// pair's bytes): 0.86-1.06x -> 1.18-1.37x of memcpy.
#include <cstddef>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// The level (index in cell.loops, at least `first_level`: the printer's loops from there on are its own)
// of the loop that pairs with the innermost one, or -1. Both loops have an even, fixed extent and place
// nothing through a table, an inverted slot or a tensor instance; the innermost one's target stride and
// the paired one's source stride are the run. A bound-checked coordinate with a digit in either loop has
// its other digits bound outside the paired loop, and not a digit in both, so the printer checks the
// whole range of both once, before the paired loop, and takes the pairs only where all of it is moved.
// The nearest such loop to the innermost one is chosen.
// @pre a move without conversion (both sides' elements are the same bytes); source_bytes is their size.
// @post -1 (always for a tile), or first_level <= level < cell.loops.size() - 1.
int run_pairs_level(const Cell& cell, int source_bytes, std::size_t first_level);

}  // namespace kvlayout::emit

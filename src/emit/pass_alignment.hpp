#pragma once
// Nests that read the same source pages but cannot be one nest run in interleaved passes (cpu.cpp's
// interleaved_passes): each pass moves one flattened iteration's share of every nest, so the second nest
// finds the pages the first just read in cache. That only holds when both nests walk the source in the
// same outer order. A runs cell beside a tile cell (K's 256-byte rows beside V's transposed tile, over a
// source that interleaves K and V per head) may be ordered by its own source or target (token blocks
// outermost) while the tile walks (layer, head) outermost: each pass then reads other pages in each nest,
// and every page comes from memory twice. Measured on vllm033-blhnc -> llamacpp-vtrans (256 MiB, in one
// process, ratios over all the pair's bytes): K alone 0.72-0.90x of memcpy at one thread, V alone 0.49x,
// the pair 0.31-0.32x / 0.52-0.60x (one / two threads); with K's loops led by V's 0.40-0.44x / 0.80-0.82x.
// The CPU printer aligns the cells before printing; the plan itself keeps each cell's own order (the
// checkers and the CUDA printer read cells one by one).
#include "emit/plan.hpp"

namespace kvlayout::emit {

// How many outermost loops a cell's nest flattens into the range its threads (and interleaved passes)
// split: two, or one.
std::size_t flattened_loops(const Cell& cell);

// The plan with each runs cell that reads within a page of a tile cell's source (sibling_cells.hpp's
// within_a_page) led by that tile's flattened loops: its loops become, outermost first, its modes equal to
// the tile's flattened loop modes (same coordinate, digit weight and extent), in the tile's order, then its
// other loops in their order. A runs cell lacking one of those modes, or already led by them, is left as
// it is; a reordered cell follows neither side's order (source_order_from -1, no target_order_loops).
// @post every cell's run, tile and the set of its loops are unchanged: only the loops' order moves.
Plan align_interleaved_passes(Plan plan, int source_bytes);

}  // namespace kvlayout::emit

#pragma once
// Runs that ride a transposing tile: a source that holds each head's K and then its V in one token row
// (vLLM's packed K/V caches, vLLM 0.33's cross-layer pages, LMCache's packed objects) moved into a target
// that splits them and transposes V (llama.cpp's transposed V cache) gives a runs cell for K and a tile for
// V that read the same token rows. Printed as two nests, even in interleaved passes, each reads the rows
// in its own pass and pays for the whole row each time: on an Intel Xeon (vllm033-blnhc ->
// llamacpp-vtrans, 256 MiB, each half alone by hand edits, ratios over the pair's bytes) K alone took
// 0.69x of memcpy's time for its bytes, V 0.42-0.50x, and the pair's times added up. The CPU printer
// therefore walks the tile's innermost loop (the head) inside its row blocks, as the outer digit of its
// down axis, and copies the K runs of each block's rows beside it: one pass over a token's whole row.
// Measured as a hand edit before it was generated (1 / 2 threads): 0.56-0.61x / 0.59-0.60x -> 0.61-0.65x /
// 0.63-0.65x of memcpy; the heads inside the row blocks without the K copies gained nothing, the K copies
// in the tile's own loop order (one head's 512 bytes of each row per pass) lost.
// Only the CPU printer folds and rides; the plan keeps every cell with its own loops.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// The values, as C, of a riding runs cell's loop variables inside its tile's row blocks, one per loop of
// `rider` in order: the tile's loop variable of the same mode (same coordinate, range, digit weight and
// extent), the folded mode's variable, or a digit of `token` (a C expression: the token that the row's
// slot holds, through the tile's inverted table). Nothing where that is not a one-to-one map: every loop
// of the tile and its folded mode taken once, the rider's token coordinate whole (every digit a loop, the
// digits a mixed-radix split covering the capacity, the range 0 .. capacity - 1), and the tile folded, its
// rows the slots of an inverted table, one mode over its whole range, no bound check on it.
// With one, each of the rider's iterations is made once for each moved token (the slots the inverse holds
// are exactly the moved tokens' entries), and the rider's own statements (its guards, lookups and
// offsets) compute where its run lies: the tile decides only the order.
std::optional<std::vector<std::string>> rider_loop_values(const Plan& plan, const Cell& tile, const Cell& rider, const std::string& token);

// The plan with each gathered-source-row tile whose rows a runs cell reads too folded and ridden by that
// cell (Cell::tile_folded, riders, ridden_by). A tile qualifies where `straight_blocks` says it prints
// straight blocks (the CPU printer's choice: no staged alternative), nothing is merged into its down axis
// (its rows are one head's columns), and its innermost loop can be folded: it has two loops or more, and
// that loop's mode steps both sides by its stride alone (no lookup reads it, it selects no instance, its
// coordinate is not bound-checked). A runs cell rides it where it reads the same tensor instances, its
// runs lie less than the folded mode's source stride from the tile's (K between one head's V and the next
// in one token row), no other cell moves in its nest (sibling_cells.hpp's same_nest), no element
// conversion is made (`convert`), and rider_loop_values maps its loops.
// @post every cell keeps its run and tile; a folded tile's loops lose their last; a tile is folded only
// where at least one cell rides it, and a ridden tile is always folded.
Plan fold_riding_runs(Plan plan, bool convert, const std::function<bool(const Cell&)>& straight_blocks);

}  // namespace kvlayout::emit

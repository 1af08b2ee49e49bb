#pragma once
// What bounds a sweep pair's move, read from its plan (emit/plan.hpp): the pair's kind and the way it
// turns, which name the pattern it is held against (pattern_set.hpp's ceiling keys), and the share of its
// elements each of its cells holds against which ceiling (RooflineTally in relayout_sweep.cpp).
#include <cstdint>
#include <map>
#include <string>

#include "emit/plan.hpp"

namespace kvlayout::bench {

// The words of the kinds, turns and ceiling keys that move_kind.cpp decides and pattern_set.cpp serves: one
// home each, so that a pair's key and the pattern serving it cannot drift apart.
inline constexpr const char* kTransposeKind = "transpose";
inline constexpr const char* kGatheredRowsKind = "transpose, gathered rows";
inline constexpr const char* kElementByElementKind = "element by element";
inline constexpr const char* kPacksKey = "transpose, packs";
inline constexpr const char* kGatheredPacksKey = "transpose, packs, gathered rows";
inline constexpr const char* kOutOfTokenFastest = "out of token-fastest";
inline constexpr const char* kIntoTokenFastest = "into token-fastest";
inline constexpr const char* kWholeLinesTurn = "whole lines, ";
inline constexpr const char* kInterleavedTurn = "K and V interleaved, ";

// From the plan's hardest cell: "element by element" (a run of one element), "transpose, gathered rows" (a
// transpose whose rows on one side are placed one by one through a table, e.g. over an inverted table's
// slots), "transpose" (8 x 8 / 16-row tiles), or runs by the shortest: "runs < 256 B", "runs 256 B ..
// 2 KiB", "runs >= 2 KiB".
std::string move_kind(const emit::Plan& plan, std::int64_t element_bytes);

// Which transposing pattern a transpose is held against (--roofline): "out of token-fastest" when every
// tile's source rows (its source-contiguous axis) are shorter than a 64-byte line and its target rows are
// not (vLLM's legacy value cache, 16 tokens to a row, into a token-major block), "into token-fastest" the
// other way round (both against the block transpose); "whole lines, source rows gathered" or "..., target
// rows gathered" when both sides' rows are whole lines and one side's are placed one by one (llama.cpp's
// transposed V rows, into them and out of them: against the row transpose), "K and V interleaved, ..."
// where the gathered side's rows lie between another cell's (vLLM's packed K/V caches, a head's V after its
// K: against the row transpose over such pages); empty (held against the best of them all) otherwise, or
// when the cells differ.
std::string transpose_turn(const emit::Plan& plan, std::int64_t element_bytes);

// The way a cell of 16-byte packs turns (vLLM's legacy key cache, [head][dim / 8][16 tokens][8], against a
// token-major layout): its runs are shorter than 256 bytes and untiled, one loop carries on contiguously
// after the run in the source and another in the target, and one of the two is a digit of the token:
// "out of token-fastest" where the source's is (the legacy cache is the source), "into token-fastest" where
// the target's is. Empty for any other cell.
std::string pack_turn(const emit::Plan& plan, const emit::Cell& cell, std::int64_t element_bytes);

// Whether a cell of 16-byte packs that turns (pack_turn) places its token-major side's rows one by one: the
// token loop following the pack on the token-fastest side feeds the other side's table lookups (vLLM's
// legacy key cache against a slot pool, each token's row at its own slot).
bool pack_rows_one_by_one(const emit::Plan& plan, const emit::Cell& cell, std::int64_t element_bytes);

// The ceiling key of a pair's cells copied in runs (untiled, two elements or more, not 16-byte packs, not
// lying between a tile's gathered rows: those K pieces are the interleaved row transpose's, moved with it):
// held against those runs of its own, observed and replayed beside the kernel (access_replay.hpp); at
// memcpy's pace where they were not replayed, which can only raise the ceiling, never make the kernel look
// bound by it.
inline constexpr const char* kOwnRunsKey = "own runs";

// Whether `cell` is one of those runs cells.
bool is_own_runs_cell(const emit::Plan& plan, const emit::Cell& cell, std::int64_t element_bytes);

// The shortest run of a plan's own runs cells, in elements (0 when it has none): observing the kernel's
// runs, those shorter are another cell's (a tile's elements are runs of one, a pack's of 16 bytes).
std::int64_t shortest_own_run(const emit::Plan& plan, std::int64_t element_bytes);

// Of a plan's moved elements (each cell counted at full capacity: every mode's whole extent), the share the
// roofline holds against each ceiling key: cells copied in runs against their own runs replayed
// (kOwnRunsKey); cells of 16-byte packs transposed against the pack transpose of their turn ("transpose,
// packs (...)": the legacy key cache beside its value tiles), with its token rows one by one where the cell
// places them so ("transpose, packs, gathered rows (...)", pack_rows_one_by_one); every other cell (tiles, single elements)
// against `pair_key`. A pair whose K is copied in 2 KiB runs and whose V is transposed (llama.cpp's, from an
// NHD source) moves half its bytes at its runs' pace: on an Ice Lake-class Xeon, llamacpp-vtrans ->
// vllm-flash-nhd's K alone (2 KiB rows read in order, written to random pages) ran 0.75x of memcpy and its
// V 0.80x, the V at the row transpose's pace (a scratch harness, 7 interleaved repetitions); the runs
// were held at memcpy before, which made such pairs look bound by their kernels.
// @post the shares are positive and add up to 1 (for a plan with cells).
std::map<std::string, double> ceiling_shares(const emit::Plan& plan, std::int64_t element_bytes, const std::string& pair_key);

}  // namespace kvlayout::bench

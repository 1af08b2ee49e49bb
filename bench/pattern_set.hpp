#pragma once
// The sweep's access patterns in one place (kvlayout_bench_sweep, --roofline): each a bare loop over the
// same bytes as a sweep pair, which the pairs of one kind are held against. Random-order chunk copies
// (what runs cost where they lie), the block transpose (block_transpose.hpp), the row transpose
// (row_transpose.hpp) and the element scatter (element_scatter.hpp), one by one and staged through slot rows
// (slot_scatter.hpp), each way, and the block transpose of 16-byte packs. Every sweep times them all
// once first (phase 0); a pair held against a pattern and under 0.8x memcpy is timed again beside the
// patterns it is held against, in the same repetitions (relayout_sweep.cpp), so that its distance from
// them is not the machine's drift between two moments.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "spec/json_node.hpp"

namespace kvlayout::bench {

// The key a ceiling goes by: a pair's kind (move_kind), or a cell's (16-byte packs: "transpose, packs"),
// with the way it turns (transpose_turn, pack_turn) in brackets where it turns one way, e.g. "transpose (out
// of token-fastest)".
std::string ceiling_key(const std::string& kind, const std::string& turn);

struct PatternRow {
  spec::Json descriptor;  // what the row is, as the sweep's JSON reports it, e.g. {"transpose": "into token-fastest", "way": "streamed", ...}
  std::string title;      // the same in words
  // The ceiling keys it serves. The tile transposes against the block transpose: of their own direction
  // where they turn one way, else the better direction. Transposes of gathered rows whose rows are whole
  // lines on both sides (llama.cpp's transposed V) against the row transpose of their direction; those
  // whose tiles turn one way (the legacy cache against a slot pool) against the block transpose of that
  // way with its token rows one by one, and any other against the best of the row transpose and the
  // whole-block transpose. The element-by-element moves against the best of the element scatter's rows (one
  // by one and staged through slot rows, each way). A cell of 16-byte packs transposed (the legacy key
  // cache, whatever the pair's kind: relayout_sweep.cpp's ceiling_shares) against the pack transpose of its
  // way ("transpose, packs (...)"), with its token rows one by one where the cell places them so
  // ("transpose, packs, gathered rows (...)"). The chunk copies serve none (runs are held against their own runs
  // replayed, access_replay.hpp).
  std::vector<std::string> keys;
  std::size_t bytes = 0;  // the bytes it moves, from `from` to `to`
  std::function<void(char* to, const char* from, int threads)> move;
};

// Every pattern over `bytes` (the sweep's --mib), with the random orders each draws once (so that timing a
// row again times the same move).
// @pre bytes a multiple of 4 MiB.
// @post every row's bytes are at most `bytes`; its move needs `to` and `from` 64-byte aligned, `bytes` each.
class PatternSet {
 public:
  explicit PatternSet(std::size_t bytes);
  PatternSet(const PatternSet&) = delete;  // the rows' moves refer to this set's orders
  PatternSet& operator=(const PatternSet&) = delete;
  const std::vector<PatternRow>& rows() const { return rows_; }
  std::size_t bytes() const { return bytes_; }
  // The rows serving `key`, by index into rows().
  std::vector<std::size_t> serving(const std::string& key) const;

 private:
  std::size_t bytes_;
  std::vector<std::uint32_t> chunk_from_[3], chunk_to_[3], block_from_, block_to_, token_rows_, paged_order_, interleaved_order_, cells_, slots_;
  std::vector<PatternRow> rows_;
};

}  // namespace kvlayout::bench

#pragma once
// The move plan a relayout kernel is printed from, derived from the same bound declarations the proof
// read. Each logical coordinate is split into mixed-radix digits ("modes") wherever either layout divides
// it by a constant (token -> token / 16, token % 16), so that every index becomes an affine function of
// the modes plus a few non-linear atoms (block-table lookups), evaluated once at the loop level where
// their modes are bound. The innermost loop is the longest run of modes contiguous in both layouts,
// copied as one block (CuTe's max_common_vector, for two layouts with indirections); the other loops
// follow the destination's physical order, except inside a block whose runs are whole target lines, which
// is read in the source's order.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::emit {

// A pair this generator cannot turn into loops (it names the construct); exit code 2 at the CLI.
struct EmitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Mode {
  std::string var;       // C variable name
  int coord = 0;         // the logical coordinate it is a digit of
  std::int64_t weight = 1;
  std::int64_t extent = 1;  // values 0 .. extent-1 (for the token's top digit: at full capacity)
  bool top_of_token = false;  // its extent shrinks with num_tokens at run time
};

// coef * e, with e an expression over modes (Coord nodes numbered by mode) that is not affine in them.
struct Atom {
  std::int64_t coef = 0;
  expr::Expr e;
  std::vector<int> modes;
};

// One side's element offset as a function of the modes.
struct SideForm {
  int tensor = 0;
  int view = 0;
  std::int64_t constant = 0;
  std::vector<std::int64_t> stride;  // per mode
  std::vector<Atom> atoms;
  int instance_coord = -1;           // coordinate selecting the tensor instance, or -1
  std::int64_t instance_first = 0;   // index of the tensor's instance 0 in src[] / dst[]
  std::int64_t instance_coord_first = 0;  // the instance coordinate's value at instance 0 (per_range FIRST)
};

struct CellCoordinate {
  std::string name;
  std::int64_t lo = 0, hi = 0;  // the cell's range
  std::vector<int> modes;       // its digits, most significant first
  bool guarded = false;         // its value is checked once all digits are bound (partial top digit)
};

// One box of positions stored by one source view and one target view.
struct Cell {
  std::vector<CellCoordinate> coords;
  std::vector<Mode> modes;
  SideForm source, target;
  std::vector<int> run;          // modes copied as one contiguous run, least significant first
  std::int64_t run_elements = 1;
  std::vector<int> loops;        // every other mode with extent > 1, outermost first
  // loops[source_order_from..] are ordered by the source, not the target (see order_tile_by_source in
  // plan.cpp); -1 when every loop follows the target. The kernel then streams only into 64-byte aligned
  // targets, whose runs are whole lines.
  int source_order_from = -1;
  // When nothing is contiguous in both sides but one mode is contiguous in the target and another in the
  // source (a transpose, e.g. the legacy token-fastest V cache), those two are moved in 8 x 8 tiles
  // inside the innermost loop instead of element by element; -1 when not.
  int tile_target_contiguous = -1;  // target stride 1
  int tile_source_contiguous = -1;  // source stride 1
  int tile_guard = -1;              // a bound-checked coordinate whose lowest digit is a tile mode (checked per tile)
  // Modes merged into the target-contiguous tile axis (CuTe's coalesce: each one's strides are the previous
  // ones' times their extent, in both layouts), and the merged axis' extent.
  std::vector<int> tile_target_merged;
  std::int64_t tile_target_extent = 0;
};

// A table entry the kernel reads, as a function of the token (checked at entry for every token moved).
struct TableRead {
  bool on_source = true;
  int table = 0;
  expr::Expr entry;  // over the logical coordinates (the token only)
};

struct Plan {
  std::vector<Cell> cells;
  int token_coord = -1;
  std::int64_t capacity = 0;  // the largest num_tokens
  std::vector<TableRead> reads;
};

// @pre the pair is graded EXACT_*, SUBSET or (by choice) NOT_EXACT; both sides fit, one content.
Plan make_plan(const layout::BoundLayout& source, const layout::BoundLayout& target);

// "cell 0 (kv_cache -> kv_cache): loops layer, kv, token/16, head, token%16; run 16 x dim" — for the
// generated file's header and for tests.
std::string describe(const Plan& plan, const layout::BoundLayout& source, const layout::BoundLayout& target);

}  // namespace kvlayout::emit

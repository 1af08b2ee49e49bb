#pragma once
// The move plan a relayout kernel is printed from, derived from the same bound declarations the proof
// read. Each logical coordinate is split into mixed-radix digits ("modes") wherever either layout divides
// it by a constant (token -> token / 16, token % 16), so that every index becomes an affine function of
// the modes plus a few non-linear atoms (block-table lookups), evaluated once at the loop level where
// their modes are bound. The innermost loop is the longest run of modes contiguous in both layouts,
// copied as one block (CuTe's max_common_vector, for two layouts with indirections); the other loops
// follow the source's physical order where the runs are whole target lines (streaming stores complete
// them in any order, and reads in order are what the prefetcher follows) unless that scatters the writes
// while the destination's order reads a few streams, else the destination's; and
// (CPU plan) where a per-token table places the source's runs and they are whole target lines, the cell
// walks that table's slots, in the source's order (see InverseTable). A transpose tile follows the
// destination's order unless the destination picks its tensor by a mode the source keeps inside one
// tensor (a per-layer target from a source holding a token's layers together): then the source's; runs
// shorter than a line there keep the destination's order with that tensor's loop sunk inward.
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
  // The slot of an inverted table (see InverseTable), in place of the token: a position exists only where
  // the inverse holds a token, src_tables[inverse][slot] >= 0 (the inverse sits in both sides' arrays). -1
  // for every other coordinate.
  int inverse = -1;
};

// Why a cell carries a second loop order (Cell::cpu_loops), and the per-CPU choice that takes it.
enum class CpuOrder {
  none,
  // Phase 5b: kept in the target's order for its 17 to 32 read streams of short runs while the source's
  // would scatter the writes (kLongestRunBySourceOnAmd); the second order is the source's. Taken on AMD
  // CPUs (kv_reads_by_source, KVLAYOUT_SOURCE_ORDER).
  by_source,
  // Phase 5f: a per-layer source into a target holding a token's layers together next to the run
  // (SGLang's host pools), walked a layer at a time (the source's order: each run written alone) or with
  // the layer innermost (the target's: one read stream per layer). The layer is split into groups of
  // kInstanceGroup (plan.cpp) and the second order walks the group outermost and the layer within it
  // innermost: each target piece is that many runs long, read from as many streams. Taken on AMD CPUs
  // (kv_instance_groups, KVLAYOUT_INSTANCE_GROUPS).
  instance_groups,
  // Phase 5f where the groups take phase 5b's place (by_source): the layer innermost, its 17 to 32 read
  // streams of short runs walked kInstanceGroup at a time. Taken on AMD and Intel CPUs alike, both measured
  // faster in groups (kv_read_streams_in_groups, KVLAYOUT_INSTANCE_GROUPS).
  read_streams_in_groups,
  // Phase 5h: the outermost loop picks runs the target interleaves within a page (a row's K, then its V:
  // vLLM's packed pages) while the source holds them far apart (K half, then V half: SGLang's host pools),
  // or a loop further in does for long runs a page or more apart in the source (FlashInfer's pages into
  // LMCache's t2d rows); the second order walks that loop innermost, each row's runs written together
  // from two read streams.
  // Taken on AMD CPUs with AVX-512 (kv_interleaved_rows, KVLAYOUT_INTERLEAVED_ROWS).
  interleaved_rows,
};

// One box of positions stored by one source view and one target view.
struct Cell {
  std::vector<CellCoordinate> coords;
  std::vector<Mode> modes;
  SideForm source, target;
  std::vector<int> run;          // modes copied as one contiguous run, least significant first
  std::int64_t run_elements = 1;
  std::vector<int> loops;        // every other mode with extent > 1, outermost first
  // loops[source_order_from..] are ordered by the source, not the target (see order_by_source in
  // plan.cpp); -1 when every loop follows the target. Its runs are then whole target lines where the target
  // starts on a line (runs_are_whole_target_lines); off a line the CPU kernel takes target_order_loops.
  int source_order_from = -1;
  // Where source_order_from >= 0, the loops in the target's order (phase 5): the CPU kernel takes them
  // instead when a target instance starts off a 64-byte line, where the source's order measured slower
  // (see print_variant in cpu.cpp).
  std::vector<int> target_order_loops;
  // A second loop order beside `loops`, every loop in it, which the CPU kernel takes instead on the CPUs
  // that measured it faster (cpu_choices.hpp), when every target instance starts on a line: both
  // orders below write whole target lines only there. `cpu_order` says why; `cpu_loops_from` is the first
  // loop out of `loops`' order. Empty and -1 where cpu_order is none.
  CpuOrder cpu_order = CpuOrder::none;
  std::vector<int> cpu_loops;
  int cpu_loops_from = -1;
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
  // Modes merged into the source-contiguous tile axis in the same way, and its extent. Only with gathered
  // source rows: each one is then read whole (a token's heads and dims) before the next, not one head at
  // a time in separate passes (see coalesce_tile_axes in plan.cpp).
  std::vector<int> tile_source_merged;
  std::int64_t tile_source_extent = 0;
  // Gathered rows: the tile's source-contiguous mode also feeds target table lookups (each of the tile's
  // target rows is placed by its own entry, e.g. a token's slot in SGLang's token pool), or its
  // target-contiguous mode feeds source lookups. The row addresses are then computed per row, and those
  // atoms (see reads_tile_mode) are evaluated there instead of at a loop level.
  bool tile_target_rows_gathered = false;
  bool tile_source_rows_gathered = false;
  // Set only on the CPU printer's own copy of the plan (emit/riding_runs.hpp), never by make_plan: the
  // checkers and the CUDA printer see every cell with its own loops. A loop mode of a gathered-source-row
  // tile walked inside its row blocks, as the outer digit of the down axis (a head over its dims, the
  // head's source stride wider than the dims: K sits between); -1 where none.
  int tile_folded = -1;
  // Runs cells copied inside this tile's row blocks, for the rows just read (their cell indices); and,
  // on such a runs cell, the tile it rides (-1 where none): its nest is not printed on its own.
  std::vector<int> riders;
  int ridden_by = -1;
};

// Whether mode m feeds a table lookup (an atom) of side f.
bool read_by_atoms(const SideForm& f, int m);

// Whether a table lookup places single elements: its coefficient is less than a 64-byte line (llama.cpp's
// cells in its transposed V, `cells[token]`, one element each), so consecutive lookups land anywhere within
// the rows they index, inside lines already read or written.
bool places_single_elements(const Atom& atom, std::int64_t element_bytes);

// Whether mode m selects a tensor instance on side f (a per-layer tensor's layer, say).
bool selects_instance_of(const Cell& cell, const SideForm& f, int m);

// Whether mode m selects a tensor instance on either side.
bool selects_instance(const Cell& cell, int m);

// Whether `atom` reads a tile mode: it is then evaluated per tile row (gathered rows), not at a loop level.
bool reads_tile_mode(const Cell& cell, const Atom& atom);

// Whether mode m is moved by the cell's tile: one of its two axes, a mode merged into either, or the mode
// folded into its row blocks (Cell::tile_folded).
bool in_tile(const Cell& cell, int m);

// The most runs a loop order may write at once, each continued in order: the prefetchers and
// write-combining buffers follow a few streams, not a scatter. The rule using it is measured at phase 5b;
// 16 itself was not swept (8 and 32 are worth a sweep each).
constexpr std::int64_t kMostStreams = 16;

// A page, the unit "near" means in the CPU plan and printer: runs less than this apart share pages (and
// TLB entries, and the DRAM rows behind them): sibling cells within one (sibling_cells.hpp), a loop whose
// values the target interleaves within one (phase 5h).
constexpr std::int64_t kPageBytes = 4096;

// The shortest read stream the target's order is kept for: a page, the span the hardware prefetchers
// follow a stream within. SGLang's page_first host pool -> lmcache056-packed reads, in the target's order,
// a token's 2 KiB of one layer (K's and V's: two streams) and then the next token's 64 KiB on; in one
// process (256 MiB, 1 / 2 threads) 0.63-0.64x / 1.06-1.08x of memcpy in that order, 0.86-0.90x /
// 1.50-1.63x in the source's (its runs replayed bare: 4.2 against 6.9 GiB/s at one thread).
constexpr std::int64_t kLeastReadStreamBytes = 4096;

// How many sequential streams side f is written or read in at once when the loops run in `loops`' order
// (outermost first). From the innermost loop out: a loop that steps exactly one chunk along f continues
// every stream so far (the chunk, each stream's contiguous length, grows by its extent); any other loop
// interleaves its extent times as many (a tensor instance is one more place), which only counts once a
// continuing loop runs around it: loops outside the last continuing one only begin the pattern again
// elsewhere. A lookup on f (a table's entry, a random place) ends the walk. With no continuing loop, or
// streams shorter than `least_stream_elements`, the runs are scattered: `most` + 1, as for too many
// streams. Once two to `most` streams are each `least_stream_elements` long (a page, for reads), the walk
// ends too: the hardware follows that many pages at once, and a loop further out that continues them
// much later does not make them more streams. Measured on an Intel Xeon, one process, 1 / 2 threads:
// hf-dynamic -> sglang-host-page-head (32 layer tensors, 16 KiB each per head, counted as 256 streams
// before) 0.73-0.75x / 1.16-1.21x of memcpy in the source's order -> 1.00x / 1.56-1.59x in the target's,
// trtllm-pool -> vllm033-blnhc (16 streams of 4 KiB) 0.91-0.92 -> 1.05-1.06, lmcache-2ltd -> vllm033-blnhc
// 0.84-0.85 -> 0.96-0.97. One stream of page-long pieces is not enough: counted the same way,
// hf-dynamic -> vllm033-bhlnc (each 4 KiB piece elsewhere) went 0.90-0.91 -> 0.78-0.81.
std::int64_t streams_along(const Cell& cell, const std::vector<int>& loops, const SideForm& f, std::int64_t least_stream_elements = 0,
                           std::int64_t most = kMostStreams);
// streams_along's walk: its count, and whether the walk ended on page-long streams (`least_stream_elements`)
// that the next loop out does not continue: each stream's next piece then lies elsewhere, past what was
// read (TensorRT-LLM's pool read a head's 16 token rows of K and of V, 4 KiB each, the next head's 8 KiB
// on: K's and V's streams hop a page at each head).
struct StreamWalk {
  std::int64_t streams = 0;
  bool hops = false;
};
StreamWalk walk_streams(const Cell& cell, const std::vector<int>& loops, const SideForm& f, std::int64_t least_stream_elements = 0,
                        std::int64_t most = kMostStreams);

// The elements side f is read or written in one piece when the loops run in `loops`' order: the run,
// grown by each innermost loop that continues it, up to the first that turns elsewhere.
std::int64_t contiguous_chunk(const Cell& cell, const std::vector<int>& loops, const SideForm& f);

// A table entry the kernel reads, as a function of the token (checked at entry for every token moved).
struct TableRead {
  bool on_source = true;
  int table = 0;
  expr::Expr entry;  // over the logical coordinates (the token only)
};

// A table the kernel inverts at entry: inverse[slot] = the token whose entry holds `slot`, -1 where no
// token moved holds it. A cell whose only contiguity on one side runs along the table's slots (llama.cpp's
// transposed V, `v[(head*D + dim)*kv_size + cells[token]]`) then iterates the slots in place of the token,
// reading each token back from the inverse: both sides become 16-byte rows, moved by gathered-row tiles,
// instead of one element per load. The entry checks already make the table injective on the tokens moved.
struct InverseTable {
  bool on_source = true;   // the side whose table is inverted
  int table = 0;           // its index in that side's tables
  std::int64_t slots = 0;  // the table's range end: the inverse has this many entries
  // Where the cells read the inverse: after each side's own tables (src_tables / dst_tables extended).
  int source_index = 0, target_index = 0;
};

struct Plan {
  std::vector<Cell> cells;
  int token_coord = -1;
  std::int64_t capacity = 0;  // the largest num_tokens
  std::vector<TableRead> reads;
  std::vector<InverseTable> inverses;  // empty unless PlanOptions::invert_tables
};

struct PlanOptions {
  // Invert a table where that turns a cell moved element by element into gathered-row tiles. Only the
  // CPU printer builds inverses; the CUDA printer and the plan checkers read plans without them.
  bool invert_tables = false;
  // Split a source instance's coordinate into groups where phase 5f finds a second order in them
  // (CpuOrder::instance_groups). Only the CPU printer prints that order; the split alone keeps the walk.
  bool group_instances = false;
};

// The CPU kernel's plan options: the one home of what the CPU printer reads, for the printer, the report,
// the benchmarks and the tests alike.
inline constexpr PlanOptions kCpuPlanOptions{.invert_tables = true, .group_instances = true};

// @pre the pair is graded EXACT_*, SUBSET or (by choice) NOT_EXACT; both sides fit, one content.
// @post without options.invert_tables, every cell's coordinates are the layouts' own (no slot).
Plan make_plan(const layout::BoundLayout& source, const layout::BoundLayout& target, const PlanOptions& options = {});

// "cell 0 (kv_cache -> kv_cache): loops layer, kv, token/16, head, token%16; run 16 x dim" — for the
// generated file's header and for tests.
std::string describe(const Plan& plan, const layout::BoundLayout& source, const layout::BoundLayout& target);

}  // namespace kvlayout::emit

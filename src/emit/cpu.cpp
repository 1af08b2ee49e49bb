#include "emit/cpu.hpp"

#include "layout/view_algebra.hpp"

#include <algorithm>
#include <stdexcept>

#include "emit/code_writer.hpp"
#include "emit/conversion.hpp"
#include "emit/cpu_choices.hpp"
#include "emit/header.hpp"
#include "emit/pass_alignment.hpp"
#include "emit/riding_runs.hpp"
#include "emit/run_pairs.hpp"
#include "emit/sibling_cells.hpp"
#include "emit/slot_stage.hpp"
#include "emit/source_box.hpp"
#include "emit/statements.hpp"
#include "expr/c_print.hpp"

namespace kvlayout::emit {
namespace {

const Inputs kInputs{"S", "T", "st", "dt", "n"};

// Where a run is read and written: the nest's own cell, or a member of its sibling group (sibling_cells.hpp),
// whose offsets are the nest's plus constants and whose instance pointers may be others.
struct RunAddress {
  std::string source_pointer = pointer_name(true), target_pointer = pointer_name(false);
  std::int64_t source_shift = 0, target_shift = 0;
  bool prefetch_next_instance = false;  // prefetches read next_instance_pointer's instance (PrefetchStep::next_instance)
  // The flag of the per-call choice (cpu_choices.hpp) under which the step prefetches run, or empty where
  // they run on every CPU (prefetch_choice).
  std::string prefetch_choice;
};

// The per-call choice a step prefetch runs under: table_free_prefetches (PrefetchStep::where_cpu_picks),
// page_hop_prefetches (on_page_hops), or none.
std::string prefetch_choice(const PrefetchStep& step) {
  if (step.where_cpu_picks) return "table_free_prefetches";
  if (step.on_page_hops) return "page_hop_prefetches";
  return "";
}

// A statement prefetching `at`'s source a step ahead (its next_displacement_name()), as printed: under
// the per-call choice kv_table_free_prefetches or kv_page_hop_prefetches where the step is the CPU's to pick.
std::string step_prefetch(const RunAddress& at, const std::string& statement) {
  return at.prefetch_choice.empty() ? statement : "if (" + cpu_choice_load(at.prefetch_choice) + ") " + statement;
}

// `statement` (a straight box's step prefetch) under the per-call choice kv_straight_box_prefetches: the
// one home of that guard for the three straight boxes (the value tiles', the rows box's, the key packs').
std::string straight_box_prefetch(const std::string& statement) { return "if (" + cpu_choice_load("straight_box_prefetches") + ") " + statement; }

// The source pointer a prefetch of `at` reads from: its own, or the instance ahead (next_instance_pointer).
std::string prefetch_pointer(const RunAddress& at) { return at.prefetch_next_instance ? at.source_pointer + "_next" : at.source_pointer; }

// The address (as C) of element `offset` (an expression) of one side, shifted as `at` says.
std::string address(const RunAddress& at, bool source, const std::string& offset, int element_bytes) {
  const std::int64_t shift = source ? at.source_shift : at.target_shift;
  const std::string element = shift == 0 ? offset : "(" + offset + " + " + i64(shift) + ")";
  return (source ? at.source_pointer : at.target_pointer) + " + " + element + " * " + std::to_string(element_bytes);
}

// The source address of element `offset` as a prefetch of `at` reads it (prefetch_pointer).
std::string prefetch_address(const RunAddress& at, const std::string& offset, int element_bytes) {
  RunAddress from = at;
  from.source_pointer = prefetch_pointer(at);
  return address(from, true, offset, element_bytes);
}

// Group member k's address: its own pointer variable (pS1, pT1, ...) where its instances are others.
RunAddress member_address(const Sibling& member, std::size_t k) {
  RunAddress at;
  if (member.source_instance_shift != 0) at.source_pointer += std::to_string(k);
  if (member.target_instance_shift != 0) at.target_pointer += std::to_string(k);
  at.source_shift = member.source_shift;
  at.target_shift = member.target_shift;
  return at;
}

// Whether every run of the cell starts 16-byte aligned in the target (given 16-byte aligned bases), so the
// copy can use streaming stores: the target's steps between runs are all multiples of 16 bytes.
bool target_runs_aligned(const Cell& cell, int target_bytes) {
  auto aligned = [&](std::int64_t elements) { return (elements * target_bytes) % 16 == 0; };
  if (!aligned(cell.target.constant)) return false;
  for (std::size_t m = 0; m < cell.modes.size(); ++m) {
    bool in_run = std::find(cell.run.begin(), cell.run.end(), static_cast<int>(m)) != cell.run.end();
    std::int64_t step = cell.target.stride[m] * (static_cast<int>(m) == cell.tile_target_contiguous ? 8 : 1);
    if (!in_run && !aligned(step)) return false;
  }
  for (const Atom& a : cell.target.atoms)
    if (!aligned(a.coef)) return false;
  return cell.tile_target_contiguous >= 0 ? true : aligned(cell.run_elements);
}

// How many gathered source rows a chunk of print_gathered_tile's staged bursts holds (measured there).
constexpr std::int64_t kGatheredChunk = 256;

// Whether gathered source rows are read whole, one block of 32 rows after another, rather than in bands of
// 32 elements, each band over all the rows: when the down axis is coalesced (a token's heads and dims), or
// when the loop around the tile steps the source by less than a 4 KiB page (the next head's rows share the
// pages of this one's, as where K and V interleave per head). Measured on the 38 moves into
// llamacpp-vtrans (2048 tokens, one thread, GiB/s): with the heads coalesced and rows read whole,
// vllm-flash-nhd 5.4 -> 8.8 and the median of the 9 such sources 5.2 -> 8.7; read whole without
// coalescing, the 5 K/V-interleaved sources 3.6-4.0 -> 5.1-5.7, but the HND sources (a head's rows a
// page or more apart) 9.6 -> 6.3, so those keep the bands. (Those take staged chunks now where the CPU
// picks them, and are read whole otherwise: see stage_gathered_chunks.)
bool read_gathered_rows_whole(const Cell& cell, int source_bytes) {
  if (!cell.tile_source_rows_gathered || cell.tile_target_rows_gathered) return false;
  if (!cell.tile_source_merged.empty() || !cell.riders.empty()) return true;
  if (cell.loops.empty()) return false;
  // Its step in the source is its stride alone: not a table lookup's, not another tensor instance's.
  const int around = cell.loops.back();
  if (read_by_atoms(cell.source, around)) return false;
  const std::int64_t step = std::abs(cell.source.stride[static_cast<std::size_t>(around)]) * source_bytes;
  return step > 0 && step < kPageBytes;
}

// Whether one side's gathered rows are dense: neighbouring rows at most twice a row's length apart, by the
// smallest step of what places them (the lookups, e.g. the token within its block, and the gathered mode's
// own stride). Where they are sparse (one head's dims where K and V interleave per head, 16 rows' lengths
// apart; SGLang's page_first host pool, a token's layers together, 32), a band of blocks over many rows
// touches one line in each of as many pages.
bool gathered_rows_dense(const Cell& cell, bool source_rows) {
  const SideForm& side = source_rows ? cell.source : cell.target;
  const int placing = source_rows ? cell.tile_target_contiguous : cell.tile_source_contiguous;  // the gathered mode
  const std::int64_t row_length = source_rows ? cell.tile_source_extent : cell.tile_target_extent;
  std::int64_t nearest = std::abs(side.stride[static_cast<std::size_t>(placing)]);
  for (const Atom& a : side.atoms)
    if (reads_tile_mode(cell, a) && a.coef != 0 && (nearest == 0 || std::abs(a.coef) < nearest)) nearest = std::abs(a.coef);
  return nearest > 0 && nearest <= 2 * row_length;
}

// Whether gathered source rows are moved in staged chunks (see print_gathered_tile): when a chunk can be
// whole (the tile has kGatheredChunk rows or more; the legacy V cache's 16-token rows never do) and the
// rows are dense, so that a chunk's bands read lines of the same few pages. Measured on the moves into
// llamacpp-vtrans (2048 tokens, two runs in one process each, against the blocks written straight): rows
// that abut (a token's heads and dims; or one head's dims where the heads are outer, HND) 0.33-0.41 ->
// 0.44-0.56x of memcpy at one thread, 0.68-0.88 -> 0.84-1.15x at two; LMCache's t2d rows, twice their
// length apart, 0.33 -> 0.41 / 0.66-0.75 -> 0.88-0.94; but sparse rows lose: K and V interleaved per head
// 0.26-0.33 -> 0.22-0.30, SGLang's page_first host pool 0.39 -> 0.24 / 0.78 -> 0.55.
// Not where the rows are read whole (read_gathered_rows_whole), which now measures faster: into
// llamacpp-vtrans (256 MiB, two runs each in one process, 1 / 2 threads) vllm-flash-nhd 0.64-0.68 /
// 0.65-0.66x of memcpy staged -> 0.75 / 0.74x read whole, sglang-mha 0.63-0.64 / 0.62-0.63 -> 0.75 /
// 0.73-0.74, lmcache056-t2d 0.57-0.58 / 0.56 -> 0.63-0.65 / 0.62; the rows read in bands instead lose
// (hf-dynamic 0.61-0.64 / 0.62-0.63 staged -> 0.51-0.58 / 0.54-0.55, trtllm-pool 0.60 / 0.60-0.61 ->
// 0.53-0.54 / 0.53-0.54, flashinfer-hnd 0.59-0.60 / 0.64 -> 0.58 / 0.57-0.58), so those stay staged.
// Staged only where the call's CPU picks it, as has_staged_bursts' alternative (print_gathered_tile): on an
// Intel Xeon the blocks straight, the rows read whole 32 at a time (the next 32 prefetched band by band),
// measured faster. 256 MiB, `kvlayout_bench_sweep --ab KVLAYOUT_STAGE=on` over the 38 moves into
// llamacpp-vtrans, one process, 1 / 2 threads: the 10 kernels staged this way 1.14-1.31x / 1.12-1.42x as
// fast read whole (vllm-flash-hnd 0.55 / 0.54x of memcpy -> 0.62 / 0.64x, hf-dynamic 0.48 / 0.45 -> 0.62 / 0.64,
// trtllm-pool 0.55 / 0.52 -> 0.72 / 0.61); its V alone, taken apart by hand edits, spent as long gathering
// its random 256-byte rows into the buffer as transposing them and writing the bursts together, and read
// in bands (the next 32 rows prefetched a line each) it was 1.1x as fast as staged, read whole 1.2x.
bool stage_gathered_chunks(const Cell& cell, int source_bytes) {
  if (!cell.tile_source_rows_gathered || cell.tile_target_rows_gathered || cell.tile_target_extent < kGatheredChunk) return false;
  return gathered_rows_dense(cell, true) && !read_gathered_rows_whole(cell, source_bytes);
}

// Whether a tile of gathered rows, whole lines on both sides, read whole (the staged chunks with the gather
// buffer, stage_gathered_chunks, are the other staged alternative) has one the kernel takes where the
// call's CPU gains from it (kv_staged_bursts, set per call by kv_run_part; see
// kv_staged_bursts_wanted): where the rows are otherwise written a line per block, into each target row one
// burst of kGatheredChunk elements from a stage. Gathered source rows read whole (read_gathered_rows_whole)
// and dense: chunks staged as stage_gathered_chunks does, without the gather buffer. Dense gathered target
// rows with strided source rows: chunks of kGatheredChunk source rows, each target row receiving one burst
// per chunk (print_gathered_tile). Measured on an AMD EPYC (Zen 3, KVM; 256 MiB, 2048 tokens, runs
// alternated, 1 / 2 threads): into llamacpp-vtrans, vllm-flash-nhd 0.42-0.46x / 0.44-0.55x of memcpy ->
// 0.47-0.51x / 0.55-0.56x (its V alone, a third run each, 0.57-0.58 / 0.67-0.71 -> 0.76-0.77 / 0.91-0.94
// over all the pair's bytes), sglang-mha 0.43-0.46 / 0.51-0.52 -> 0.53-0.58 / 0.62-0.64, lmcache056-t2d
// 0.33-0.37 / 0.38-0.43 -> 0.38-0.43 / 0.43-0.49; with the gather buffer instead, vllm-flash-nhd 0.42-0.55
// / 0.47-0.62. The bare loops agree (bench/row_transpose.hpp): straight 0.32-0.35x / 0.42-0.44x, staged
// 0.45-0.47x / 0.56-0.58x, both directions. Over every pair into or out of llamacpp-vtrans, each kernel
// timed both ways in the same repetitions (kvlayout_bench_sweep --ab KVLAYOUT_STAGE=off): the 20 kernels
// with the alternative 1.21-1.37x faster staged (median 1.31) at one thread, 1.06-1.39x (1.20) at two; the
// 34 without it 0.87-1.05x / 0.82-1.09x (1.00 / 1.00), the noise of the instrument.
bool has_staged_bursts(const Cell& cell, int source_bytes) {
  if (cell.tile_source_rows_gathered == cell.tile_target_rows_gathered) return false;
  if (cell.tile_source_rows_gathered)  // a ridden tile (riding_runs.hpp) has none: it is ridden only where the straight blocks are taken
    return cell.riders.empty() && read_gathered_rows_whole(cell, source_bytes) && gathered_rows_dense(cell, true) &&
           cell.tile_target_extent >= kGatheredChunk;
  return gathered_rows_dense(cell, false) && cell.tile_target_extent >= kGatheredChunk;
}

// The most bytes of gathered source rows a chunk copies whole before its bands read them (measured at
// 256 rows of 2 KiB: with the stage, they stay in a 2 MiB second-level cache).
constexpr std::int64_t kMostGatheredBytes = std::int64_t{512} << 10;

// The bytes of a staged chunk's gather buffer (see print_gathered_tile), or 0: where chunks are staged and
// their rows are whole lines of at most kMostGatheredBytes together.
std::int64_t gathered_chunk_bytes(const Cell& cell, int source_bytes) {
  const std::int64_t row = cell.tile_source_extent * source_bytes;
  if (!stage_gathered_chunks(cell, source_bytes) || row % 64 != 0 || kGatheredChunk * row > kMostGatheredBytes) return 0;
  return kGatheredChunk * row;
}

// The order of a staged box's steps (32 columns each, `span` source bytes apart): four source pages at a
// time, a step from each in turn, so that one core reads four page streams at once (as kv_stream_copy does),
// where the steps in order read one page after another; identity where the steps do not tile whole pages.
// As C, the step taken at iteration `q` of `steps`.
std::string page_interleaved_step(std::int64_t steps, std::int64_t span) {
  if (span <= 0 || kPageBytes % span != 0) return "q";
  const std::int64_t per_page = kPageBytes / span, group = kPageStreams * per_page;
  if (steps % group != 0) return "q";
  const std::string pages = std::to_string(kPageStreams);
  return "(q % " + pages + ") * " + i64(per_page) + " + (q / " + pages + ") % " + i64(per_page) + " + (q / " + i64(group) + ") * " + i64(group);
}

// A staged buffer `from` written to `to` (C expressions), `bytes` of it: streamed where `to` is 16-byte
// aligned (kv_stream_copy's precondition), else by an ordinary memcpy. The one home of that rule for the
// staged boxes and rows.
void print_stream_out(CodeWriter& w, const std::string& to, const std::string& from, const std::string& bytes) {
  w.line("if (reinterpret_cast<uintptr_t>(" + to + ") % 16 == 0) kv_stream_copy<" + bytes + ">(" + to + ", " + from + ");");
  w.line("else std::memcpy(" + to + ", " + from + ", " + bytes + ");");
}

// The smallest staged box (staged_box_bytes) that has a straight alternative, taken where the call's CPU
// streams such boxes straight (kv_staged_boxes_wanted: on Ice Lake server CPUs). Measured there, every pair
// out of vllm-paged-legacy (`kvlayout_bench_sweep --ab KVLAYOUT_STAGE_BOXES=on`, 256 MiB, one process of 5
// interleaved repetitions, 1 / 2 threads): 32 KiB boxes (a token-major block) straight 1.10x / 1.18x as
// fast into flashinfer-nhd, 1.13 / 1.08 lmcache-2ltd, 1.15 / 1.06 sglang-host-layer-first, 1.05 / 1.03
// vllm-flash-nhd; 4 KiB boxes (a head's block) 0.93 / 0.96 flashinfer-hnd, 0.87 / 1.01 vllm-flash-hnd, 0.93
// / 0.99 hf-dynamic, 1.05 / 0.98 trtllm-pool, 1.03 / 1.02 dynamo-universal, so those stay staged (kernels
// with no staged box read 0.87-1.16x in the same run: the noise of one run). Two 32 KiB stages exceed
// that CPU's 48 KiB first-level cache, two 4 KiB ones do not: a likely reason, not a measured one.
// The same size bounds the straight alternatives of the key packs' boxes (pack_lines: a kilobyte step
// writes one line of each of 16 rows) and of a block's rows staged whole into a slot pool's gathered rows
// (staged_rows_box_bytes, staged_runs_into_rows). Measured there with `--ab-source` against the kernels
// staged (one process each, 7-9 interleaved repetitions, 1 / 2 threads): vllm-paged-legacy -> sglang-mha
// 1.35x / 1.25x as fast (0.55x -> 0.74x / 0.55x -> 0.69x of memcpy; its keys alone 1.12x / 1.12x, its
// values alone 1.18x / 1.15x), -> llamacpp 1.20x / 1.19x; the key packs straight into token-major blocks,
// -> flashinfer-nhd 1.09x / 1.14x, -> lmcache-2ltd 1.08x / 1.08x, -> vllm-flash-nhd 1.05x / 1.07x (an
// earlier process 1.08x / 0.96x); into head-major blocks, a block's 8 heads of packs as one 32 KiB box
// (pack_lines_box), -> flashinfer-hnd 1.03-1.07x / 1.03-1.04x, -> vllm-flash-hnd 1.03x / 1.00x (two
// processes and one; a hand edit of its values the same way, each head's 4 KiB tile box taken as part of
// the block's 32 KiB, pages four at a time, read 1.05x / 0.84-1.10x over three processes: not taken).
constexpr std::int64_t kStraightBoxBytes = std::int64_t{16} << 10;

// The bytes of a box of a block's rows staged whole into gathered target rows (print_gathered_tile), or 0:
// 16-bit rows of 16 slots along the source's contiguous axis, which abut into one span of at most 32 KiB
// (the legacy vLLM value cache's block, `[head, dim, slot]`), each slot's whole row of columns one gathered
// target row (a slot pool's token row, SGLang's or llama.cpp's), no bound along the columns. The box is
// transposed into a buffer on the stack a step of 32 columns at a time, the source's pages four at a time
// (page_interleaved_step), and each target row then streamed out whole. Written straight, a line per block
// into each of the 16 rows, with no prefetch (the blocks prefetch only within a block's 32 rows).
// Measured on vllm-paged-legacy -> sglang-mha's V alone (256 MiB, two runs of `--ab-source` in one process
// each, ratios over all the pair's bytes, 1 / 2 threads): 1.03 / 0.95 straight, 1.23-1.24 / 1.20-1.25
// staged whole; the box before streamed out a kilobyte per step while the next is staged (as the staged
// tiles do) lost 0.86-0.88x of that. That straight way took 32 x 32 blocks in the source's order; a box
// of kStraightBoxBytes or more has a straight alternative of its own steps, the source's pages four at a
// time, a whole line into each row (kv_transpose_lines16 over kv_rows_placed), taken where the call's CPU
// streams boxes straight (kv_staged_boxes: faster on an Ice Lake-class Xeon, see kStraightBoxBytes).
std::int64_t staged_rows_box_bytes(const Cell& cell, int source_bytes, int target_bytes, bool convert) {
  if (convert || source_bytes != 2 || target_bytes != 2 || !cell.tile_target_rows_gathered || cell.tile_source_rows_gathered) return 0;
  const Mode& down = cell.modes[static_cast<std::size_t>(cell.tile_source_contiguous)];
  const bool guard_across = cell.tile_guard >= 0 && down.coord != cell.tile_guard;
  const std::int64_t across = cell.tile_target_extent, slots = cell.tile_source_extent;
  const std::int64_t source_row = cell.source.stride[static_cast<std::size_t>(cell.tile_target_contiguous)];
  const std::int64_t bytes = across * slots * target_bytes;
  if (slots != 16 || source_row != slots || across % 32 != 0 || guard_across || bytes > (std::int64_t{32} << 10)) return 0;
  return bytes;
}

// The copy of one run, or one tile (below); `plan` holds the cells riding a folded tile (riding_runs.hpp).
void print_copy(CodeWriter& w, const Cell& cell, int source_bytes, int target_bytes, bool convert, bool prefetch, const RunAddress& at = {},
                bool stage_deferred = false, const Plan* plan = nullptr);

// The loop, of those at levels under `below`, whose next iteration places the next set of the source rows
// that `row_mode` places through the source's lookups (a slot pool's 16 token rows a block): the innermost
// loop over a digit of the same coordinate that moves the source only through lookups that also read
// `row_mode` (at least one; no stride, no other table reads it, it picks no instance), so that the rows' placement
// printed with its value one higher places the next rows. -1 where there is none.
int next_rows_level(const Cell& cell, int row_mode, int below) {
  const int coord = cell.modes[static_cast<std::size_t>(row_mode)].coord;
  auto reads = [](const Atom& a, int m) { return std::find(a.modes.begin(), a.modes.end(), m) != a.modes.end(); };
  for (int level = below - 1; level >= 0; --level) {
    const int m = cell.loops[static_cast<std::size_t>(level)];
    if (cell.modes[static_cast<std::size_t>(m)].coord != coord) continue;
    if (cell.source.stride[static_cast<std::size_t>(m)] != 0 || cell.source.instance_coord == coord) return -1;
    bool looked_up = false;
    for (const Atom& a : cell.source.atoms) {
      if (reads(a, m) && !reads(a, row_mode)) return -1;
      looked_up = looked_up || reads(a, m);
    }
    return looked_up ? level : -1;
  }
  return -1;
}

// Opens the block in which the loop at `level` (next_rows_level's) stands one iteration on: kv_next_step
// its next value, within the loop's extent, its variable shadowed by it. The caller prints the rows'
// placement inside and closes the block.
void open_next_step(CodeWriter& w, const Cell& cell, int level) {
  const int mode = cell.loops[static_cast<std::size_t>(level)];
  const std::string& var = cell.modes[static_cast<std::size_t>(mode)].var;
  w.line("const int64_t kv_next_step = " + var + " + 1;");
  w.open("if (kv_next_step < " + extent(cell, mode, kInputs) + ")");
  w.line("const int64_t " + var + " = kv_next_step;  // the rows' placement below, one " + var + " on");
}

// next_rows_level for a gathered-source-row tile of at most 32 rows (the slot pool's rows into vLLM's
// legacy value blocks), whose rows are all placed before its blocks: nothing to prefetch of its own rows
// ahead, so the next tile's.
int next_gathered_rows_level(const Cell& cell) {
  if (!cell.tile_source_rows_gathered || cell.tile_target_extent > 32) return -1;
  return next_rows_level(cell, cell.tile_target_contiguous, static_cast<int>(cell.loops.size()));
}

// A gathered-row tile (Cell::tile_*_rows_gathered), moved in blocks of up to 32 x 32 (a 64-byte line of
// 16-bit elements along each axis). The gathered side's rows are placed once per loop iteration, for its
// whole axis, into a row array (a slot no moved token holds gives a null row). Gathered target rows: the
// blocks walk them innermost, so the source's 32 rows are read as 32 sequential streams while the target
// rows, in whatever order the table gives, are written as whole streamed lines (sparse ones, where the call's
// CPU picks it, each whole before the next: sparse_rows_whole). Gathered source rows only:
// dense rows in staged chunks of kGatheredChunk rows where the call's CPU picks them, each target row
// receiving one burst per band (see stage_gathered_chunks and has_staged_bursts); otherwise in bands of 32
// target rows over all the rows, or (see read_gathered_rows_whole, and the straight alternative of
// stage_gathered_chunks) 32 rows at a time read whole (prefetched a block ahead) into the target's rows.
// Measured on llamacpp-vtrans <-> vllm-flash-nhd: see bench/README.md.
// Extents need not be multiples of 8 or 32: each block counts its rows.
void print_gathered_tile(CodeWriter& w, const Cell& cell, int source_bytes, int target_bytes, bool prefetch, const RunAddress& at, const Plan* plan) {
  if (!cell.riders.empty() && plan == nullptr) throw std::logic_error("a ridden tile printed without the plan that holds its riders");
  std::vector<const Cell*> riders;
  for (int r : cell.riders) riders.push_back(&plan->cells[static_cast<std::size_t>(r)]);
  Mode across = cell.modes[static_cast<std::size_t>(cell.tile_target_contiguous)];
  across.extent = cell.tile_target_extent;  // with the coalesced modes
  Mode down = cell.modes[static_cast<std::size_t>(cell.tile_source_contiguous)];
  down.extent = cell.tile_source_extent;  // with the coalesced modes
  const std::int64_t source_row = cell.source.stride[static_cast<std::size_t>(cell.tile_target_contiguous)];
  const std::int64_t target_row = cell.target.stride[static_cast<std::size_t>(cell.tile_source_contiguous)];
  std::string across_name = across.var, down_name = down.var;
  for (int m : cell.tile_target_merged) across_name = cell.modes[static_cast<std::size_t>(m)].var + "*" + across_name;
  for (int m : cell.tile_source_merged) down_name = cell.modes[static_cast<std::size_t>(m)].var + "*" + down_name;
  w.line("// " + down_name + " is contiguous in the source, " + across_name + " in the target: 32 x 32 blocks whose " +
         (cell.tile_target_rows_gathered ? (cell.tile_source_rows_gathered ? "rows on both sides" : "target rows") : "source rows") +
         " are placed one by one.");
  const std::int64_t rows_box = staged_rows_box_bytes(cell, source_bytes, target_bytes, false);
  if (prefetch && rows_box == 0) {
    w.line("(void)" + next_displacement_name() + (cell.riders.empty() ? ";  // the blocks prefetch their own rows" : ";  // rows read in order, the next head's prefetched where the CPU picks it"));
    if (at.prefetch_next_instance) w.line("(void)" + prefetch_pointer(at) + ";");
  }
  const bool guard_down = cell.tile_guard >= 0 && down.coord == cell.tile_guard;
  const bool guard_across = cell.tile_guard >= 0 && !guard_down;
  // How many rows along an axis from `base`: at most `most`, within the extent and the bound checked.
  auto count_of = [&](bool along_down, const std::string& base, std::int64_t most) {
    const int mode = along_down ? cell.tile_source_contiguous : cell.tile_target_contiguous;
    const std::int64_t extent = along_down ? down.extent : across.extent;
    std::string limit = most > 0 ? "kv_min(INT64_C(" + std::to_string(most) + "), " + i64(extent) + " - " + base + ")" : i64(extent);
    if (along_down ? guard_down : guard_across)
      limit = "kv_min(" + limit + ", " + coordinate_limit(cell, cell.tile_guard, kInputs) + " - (" + coordinate_base(cell, cell.tile_guard, mode) +
              " + " + base + ") + 1)";
    return limit;
  };
  // A gathered side's rows for its whole axis (its mode's value g), placed through its lookups, and whether
  // every one is present (kv_to_present / kv_from_present: no slot absent, so no row null), which spares
  // the straight blocks their per-block check (kv_transpose_rows_block's `present`).
  auto gathered_rows = [&](bool target_rows, const std::string& count) {
    const Mode& m = cell.modes[static_cast<std::size_t>(target_rows ? cell.tile_source_contiguous : cell.tile_target_contiguous)];
    const std::string array = target_rows ? "kv_to_rows" : "kv_from_rows", present = target_rows ? "kv_to_present" : "kv_from_present";
    w.line("const int64_t " + count + " = kv_max(INT64_C(0), " + count_of(target_rows, "0", 0) + ");");
    w.line(array + ".assign(static_cast<size_t>(" + count + "), nullptr);");
    w.line("bool " + present + " = true;");
    w.open("for (int64_t g = 0; g < " + count + "; ++g)");
    w.line("const int64_t " + m.var + " = g;");
    if (cell.coords[static_cast<std::size_t>(m.coord)].inverse >= 0)
      w.line("if (" + slot_absent(cell, m.coord, kInputs) + ") { " + present + " = false; continue; }");
    for (const auto& line : row_offset(cell, !target_rows, kInputs, "row")) w.line(line);
    w.line(array + "[static_cast<size_t>(g)] = " + pointer_name(!target_rows) + " + row * " + std::to_string(target_rows ? target_bytes : source_bytes) + ";");
    w.close();
  };
  // Up to `most` strided rows of the other side from `base` (a staged chunk's kGatheredChunk source rows,
  // else a block's 32), in `array` (kv_to or kv_from by default).
  // `shift`: an element offset added (the folded mode's step, fused_rows_whole).
  auto strided_rows = [&](bool target_rows, const std::string& base, const std::string& count, std::int64_t most = 32, std::string array = "",
                          const std::string& shift = "") {
    if (array.empty()) array = target_rows ? "kv_to" : "kv_from";
    w.line("const int64_t " + count + " = " + count_of(target_rows, base, most) + ";");
    w.line("if (" + count + " <= 0) break;");
    w.line(std::string(target_rows ? "char* " : "const char* ") + array + "[" + std::to_string(most) + "] = {};");
    w.line("for (int64_t r = 0; r < " + count + "; ++r) " + array + "[r] = " + pointer_name(!target_rows) + " + (" + final_offset(cell, !target_rows) +
           shift + " + (" + base + " + r) * " + i64(target_rows ? target_row : source_row) + ") * " + std::to_string(target_rows ? target_bytes : source_bytes) +
           ";");
  };
  const std::string sb = std::to_string(source_bytes), tb = std::to_string(target_bytes);
  // The staged chunks' stage (see staged_source_chunks and staged_target_chunks): 32 rows of one burst.
  const std::int64_t stage_row = kGatheredChunk * target_bytes;
  auto declare_stage = [&] {
    w.line("alignas(64) char kv_stage[" + std::to_string(32 * stage_row) + "];");
    w.line("char* kv_stage_rows[32];");
    w.line("for (int k = 0; k < 32; ++k) kv_stage_rows[k] = kv_stage + k * " + std::to_string(stage_row) + ";");
  };
  // A whole chunk of `from_rows` (source rows across1 ..) by 32 target rows (down0 ..) transposed into the
  // stage, then target row r (`to_row`) written one burst at across1.
  auto stage_and_burst = [&](const std::string& from_rows, const std::string& to_row) {
    w.line("for (int64_t across0 = 0; across0 < chunk; across0 += 32) kv_transpose_rows_block<" + sb + ">(kv_stage_rows, across0 * " + tb + ", " +
           from_rows + " + across0, down0 * " + sb + ", 32, 32, false);");
    w.open("for (int64_t r = 0; r < 32; ++r)");
    w.line("char* const burst = " + to_row + " + across1 * " + tb + ";");
    w.line("if (stream && reinterpret_cast<uintptr_t>(burst) % 16 == 0) kv_stream_copy<" + std::to_string(stage_row) + ">(burst, kv_stage_rows[r]);");
    w.line("else std::memcpy(burst, kv_stage_rows[r], " + std::to_string(stage_row) + ");");
    w.close();
  };
  // Gathered source rows in chunks of kGatheredChunk, staged (stage_gathered_chunks), each chunk's rows first
  // copied into a buffer where `with_gather` and gathered_chunk_bytes allow. Leaves its two loops open.
  auto staged_source_chunks = [&](bool with_gather) {
    // Outer: chunks of kGatheredChunk gathered source rows; per band of 32 strided target rows, the chunk's
    // blocks are transposed into a stage on the stack (ordinary stores, it stays in L1) and each target row
    // then receives one burst of kGatheredChunk elements. Written straight from the blocks, each target row
    // got one 64-byte line per visit, 1024 rows a page apart, and those scattered writes bounded the move:
    // measured on vllm-flash-nhd -> llamacpp-vtrans's V alone (2048 tokens, ratios over all the pair's
    // bytes, one thread): the blocks' writes alone, nothing read, 0.63x streamed / 1.0x ordinary, against
    // 2.6x for the same bytes in 512-byte bursts; V 0.52x (streamed lines) -> 0.70x (ordinary stores) ->
    // 0.77-0.83x (staged 512-byte bursts); chunks of 128 / 512 / 1024 rows 0.59 / 0.74 / 0.70; prefetching
    // the next chunk, row by row or line by line, changed nothing. A chunk with a slot no moved token holds
    // (a null row) or a band the bound check cuts takes the blocks straight, with ordinary stores, so the
    // stage never writes a byte the move does not own.
    const std::int64_t chunk = kGatheredChunk;
    declare_stage();
    w.open("for (int64_t across1 = 0; across1 < kv_acrosses; across1 += " + std::to_string(chunk) + ")");
    w.line("const int64_t chunk = kv_min(INT64_C(" + std::to_string(chunk) + "), kv_acrosses - across1);");
    w.line("bool whole_chunk = chunk == " + std::to_string(chunk) + ";");
    w.line("for (int64_t r = across1; r < across1 + chunk; ++r) whole_chunk = whole_chunk && kv_from_rows[static_cast<size_t>(r)] != nullptr;");
    // A whole chunk's rows copied first into one buffer (gathered_chunk_bytes), each row whole, four rows
    // a line at a time with the rows eight ahead prefetched: the bands then read them from cache. Read by
    // the bands straight, each band took one line from each of the chunk's rows, 256 pages apart, more
    // streams than the hardware follows. Measured on vllm-flash-nhd -> llamacpp-vtrans (256 MiB, one
    // process, 1 / 2 threads, GiB/s): 5.4-5.7 -> 6.5-6.8 / 8.2-10.7 -> 12.6-12.9 gathered four rows at a
    // time; with the prefetch 7.0-7.5 / 13.4-14.2 (four rows ahead 7.0 / 13.2-13.4, sixteen 7.1-7.3 /
    // 13.6-14.0); two rows at a time 6.5 / 12.2-12.6, eight 7.0-7.1 / 13.2-13.9.
    const std::int64_t gather = with_gather ? gathered_chunk_bytes(cell, source_bytes) : 0, row_bytes = down.extent * source_bytes;
    std::string chunk_rows = "kv_from_rows.data() + across1";
    if (gather > 0) {
      w.line("const char* const* kv_chunk = kv_from_rows.data() + across1;");
      w.line("const char* kv_gathered_rows[" + std::to_string(chunk) + "];");
      w.open("if (whole_chunk)");
      w.line("if (!kv_gather) kv_gather.reset(new char[" + std::to_string(gather) + "]);");
      w.open("for (int64_t r = 0; r < " + i64(chunk) + "; r += 4)");
      w.open("for (int64_t line = 0; line < " + i64(row_bytes) + "; line += 64)");
      w.line("if (r + 8 < " + i64(chunk) + ") { KV_UNROLL for (int64_t k = 0; k < 4; ++k) kv_prefetch<64>(kv_chunk[r + 8 + k] + line); }");
      w.line("KV_UNROLL for (int64_t k = 0; k < 4; ++k) std::memcpy(kv_gather.get() + (r + k) * " + i64(row_bytes) + " + line, kv_chunk[r + k] + line, 64);");
      w.close();
      w.close();
      w.line("for (int64_t r = 0; r < " + i64(chunk) + "; ++r) kv_gathered_rows[r] = kv_gather.get() + r * " + i64(row_bytes) + ";");
      w.line("kv_chunk = kv_gathered_rows;");
      w.close();
      chunk_rows = "kv_chunk";
    }
    w.open("for (int64_t down0 = 0; down0 < " + i64(down.extent) + "; down0 += 32)");
    strided_rows(true, "down0", "downs");
    w.open("if (whole_chunk && downs == 32)");
    stage_and_burst(chunk_rows, "kv_to[r]");
    w.close();
    w.open("else");
    w.line("for (int64_t across0 = across1; across0 < across1 + chunk; across0 += 32) kv_transpose_rows_block<" + sb + ">(kv_to, across0 * " + tb +
           ", kv_from_rows.data() + across0, down0 * " + sb + ", kv_min(INT64_C(32), across1 + chunk - across0), downs, false);");
    w.close();
  };
  // Sparse gathered target rows (see gathered_rows_dense), each written whole, where the call's CPU picks it
  // (kv_sparse_rows_whole: the rows whole rather than a line per block): outer, 32 of
  // them; inner, the source's strided rows in bands of 32, so that each target row is written whole (its
  // lines in a row) before the next, while the source's rows are read as sequential streams, 64 bytes per
  // band. With the target rows inner (the straight blocks below), each receives one 64-byte line per band, a
  // page or more from the last. Measured on llamacpp-vtrans -> vllm-packed-nhd (2048 tokens, two runs in one
  // process, 2026-12-03): V alone 8.7-8.8 -> 9.5-9.9 GiB/s at one thread, 15.0-15.3 -> 17.7-17.9 at two; ->
  // sglang-host-page-head 6.3-6.5 -> 6.8-6.9 and 11.4-11.6 -> 12.0-12.2 (the pair). For dense target rows
  // (hf-dynamic, vllm-flash-hnd and -nhd) the order made no difference. On an Intel Xeon (2026-12-05, 256 MiB,
  // `kvlayout_bench_sweep --ab-source`, 1 / 2 threads, runs on a quiet machine) the straight blocks were the
  // faster for all six such targets: sglang-host-page-first 1.28-1.33x / 1.27-1.32x, lmcache056-packed
  // 1.13-1.17x / 1.15-1.17x, vllm-packed-nhd 1.13-1.15x / 1.13-1.15x, vllm033-lbnhc 1.13 / 1.18,
  // sglang-host-page-head 1.07-1.13x / 1.09, vllm033-blnhc 1.08-1.11x / 1.05-1.09x. Leaves its two loops open.
  auto sparse_rows_whole = [&]() {
    w.line("const int64_t kv_acrosses = kv_max(INT64_C(0), " + count_of(false, "0", 0) + ");");
    w.line("kv_from_rows.resize(static_cast<size_t>(kv_acrosses));");
    w.line("for (int64_t r = 0; r < kv_acrosses; ++r) kv_from_rows[static_cast<size_t>(r)] = " + pointer_name(true) + " + (" +
           final_offset(cell, true) + " + r * " + i64(source_row) + ") * " + sb + ";");
    w.open("for (int64_t down0 = 0; down0 < kv_downs; down0 += 32)");
    w.line("const int64_t downs = kv_min(INT64_C(32), kv_downs - down0);");
    w.open("for (int64_t across0 = 0; across0 < kv_acrosses; across0 += 32)");
    w.line("const int64_t acrosses = kv_min(INT64_C(32), kv_acrosses - across0);");
    w.line("if (down0 + 32 < kv_downs) for (int64_t r = across0; r < across0 + acrosses; ++r) kv_prefetch<64>(kv_from_rows[static_cast<size_t>(r)] + (down0 + 32) * " +
           sb + ");");
    w.line("kv_transpose_rows_block<" + sb + ">(kv_to_rows.data() + down0, across0 * " + tb + ", kv_from_rows.data() + across0, down0 * " + sb +
           ", acrosses, downs, stream);");
  };
  // A folded tile with its riders (riding_runs.hpp): outer, 32 gathered source rows; then the folded mode's
  // values, for each the riders' runs of the 32 rows that lie before the tile's columns,
  // the tile's blocks of 32 strided target rows, and the riders' runs after them, so that each row is read
  // in address order (a rider's loop variables come from the tile's and from the token the row's slot
  // holds, rider_loop_values; its own statements place its run). The rows are read whole and in order.
  // Measured on an Intel Xeon, vllm033-blnhc -> llamacpp-vtrans (256 MiB, hand edits of this loop beside
  // it in one process, 1 / 2 threads): the next 32 rows prefetched whole (4 KiB each) 0.51-0.54x /
  // 0.47-0.50x of memcpy, without 0.62-0.64x / 0.58-0.59x, the K runs first as well 0.63-0.71x /
  // 0.63-0.67x; prefetched a line per block, or a head's 512 bytes per head, within 4% of the whole rows:
  // nothing prefetched there. On an AMD EPYC of Zen 4 the K runs alone took three quarters of the pair's
  // time (hand edits of vllm-packed-nhd -> llamacpp-vtrans), and with the next head's runs and columns of
  // the block's rows prefetched beside each head (print_next_fold_prefetch) the 4 such kernels read
  // 1.26-1.50x / 1.28-1.39x as fast at median: where the call's CPU picks it (kv_ridden_row_prefetches).
  // Two heads ahead was no faster than one (hand edits, 11 interleaved repetitions: 1.20x / 1.15x against
  // 1.23x / 1.22x).
  // Leaves two loops open.
  // What the folded mode's next value reads of each row, prefetched where the call's CPU picks it
  // (kv_ridden_row_prefetches): each rider's run and the tile's columns, at the next value's step, in this
  // block's rows, or at the first value in the next block's rows after the last. The riders' runs lie in
  // the tile's rows at their constant's distance from the tile's (reads_the_tile_rows in riding_runs.cpp),
  // so every address prefetched is one the kernel reads.
  auto print_next_fold_prefetch = [&](const Mode& fold) {
    const std::int64_t fold_step = cell.source.stride[static_cast<std::size_t>(cell.tile_folded)];
    w.open("if (" + cpu_choice_load("ridden_row_prefetches") + ")");
    w.line("const bool kv_last = " + fold.var + " + 1 == " + i64(fold.extent) + ";");
    w.line("const int64_t kv_next_step = kv_last ? 0 : (" + fold.var + " + 1) * " + i64(fold_step) + ";");
    w.line("const int64_t kv_next_first = kv_last ? across0 + 32 : across0;");
    w.open("for (int64_t r = kv_next_first; r < kv_min(kv_next_first + 32, kv_acrosses); ++r)");
    w.line("const char* const kv_row = kv_from_rows[static_cast<size_t>(r)];");
    w.line("if (kv_row == nullptr) continue;");
    for (const Cell* rider : riders)
      w.line("kv_prefetch<" + std::to_string(rider->run_elements * source_bytes) + ">(kv_row + (kv_next_step + " + i64(rider->source.constant - cell.source.constant) +
             ") * " + sb + ");");
    w.line("kv_prefetch<" + std::to_string(down.extent * source_bytes) + ">(kv_row + kv_next_step * " + sb + ");");
    w.close();
    w.close();
  };
  auto fused_rows_whole = [&]() {
    const Mode& fold = cell.modes[static_cast<std::size_t>(cell.tile_folded)];
    const Mode& slot = cell.modes[static_cast<std::size_t>(cell.tile_target_contiguous)];
    const CellCoordinate& slots = cell.coords[static_cast<std::size_t>(slot.coord)];
    auto print_riders = [&](bool before) {
      std::vector<const Cell*> these;
      for (const Cell* rider : riders)
        if ((rider->source.constant < cell.source.constant) == before) these.push_back(rider);
      if (these.empty()) return;
      w.open("for (int64_t r = 0; r < acrosses; ++r)");
      w.line("const int64_t " + slot.var + " = across0 + r;");
      w.line("const int64_t kv_token = " + kInputs.src_tables + "[" + std::to_string(slots.inverse) + "][" + coordinate_base(cell, slot.coord, -1) + "];");
      w.line("if (kv_token < 0) continue;");
      for (const Cell* rider : these) {
        const std::optional<std::vector<std::string>> values = rider_loop_values(*plan, cell, *rider, "kv_token");
        if (!values) throw std::logic_error("a riding runs cell whose loops the tile does not map");
        w.open("");
        // Every value first, then the rider's names: a name may be another value's variable.
        for (std::size_t l = 0; l < values->size(); ++l) w.line("const int64_t kv_ride" + std::to_string(l) + " = " + (*values)[l] + ";");
        for (std::size_t l = 0; l < values->size(); ++l)
          w.line("const int64_t " + rider->modes[static_cast<std::size_t>(rider->loops[l])].var + " = kv_ride" + std::to_string(l) + ";");
        for (int level = -1; level < static_cast<int>(rider->loops.size()); ++level)
          for (const auto& line : level_statements(*rider, level, kInputs, "continue;")) w.line(line);
        print_copy(w, *rider, source_bytes, target_bytes, false, false);
        w.close();
      }
      w.close();
    };
    w.open("for (int64_t across0 = 0; across0 < kv_acrosses; across0 += 32)");
    w.line("const int64_t acrosses = kv_min(INT64_C(32), kv_acrosses - across0);");
    // The folded mode's step on each side.
    const std::string source_step = fold.var + " * " + i64(cell.source.stride[static_cast<std::size_t>(cell.tile_folded)]) + " + ";
    const std::string target_step = " + " + fold.var + " * " + i64(cell.target.stride[static_cast<std::size_t>(cell.tile_folded)]);
    w.open("for (int64_t " + fold.var + " = 0; " + fold.var + " < " + i64(fold.extent) + "; ++" + fold.var + ")");
    print_next_fold_prefetch(fold);
    print_riders(true);
    w.open("for (int64_t down0 = 0; down0 < " + i64(down.extent) + "; down0 += 32)");
    strided_rows(true, "down0", "downs", 32, "", target_step);
    w.line("kv_transpose_rows_block<" + sb + ">(kv_to, across0 * " + tb + ", kv_from_rows.data() + across0, (" + source_step + "down0) * " + sb +
           ", acrosses, downs, stream, kv_from_present);");
    w.close();
    print_riders(false);
  };
  if (cell.tile_target_rows_gathered) gathered_rows(true, "kv_downs");
  if (cell.tile_source_rows_gathered) gathered_rows(false, "kv_acrosses");
  // A tile of 32 gathered source rows or fewer has no next block of rows to prefetch: the next tile's rows
  // are placed (next_gathered_rows_level), and each block's lines of them prefetched beside its own
  // (next_tile_prefetch), where the rows are dense (read band by band, as the next block's are). Measured
  // on an AMD EPYC of Zen 4 (256 MiB, 1 / 2 threads, the prefetch switched in one kernel, three processes
  // of 5 interleaved repetitions) over the 4 kernels with such tiles, slot pools' 16 token rows of 2 KiB
  // into vLLM's legacy value blocks (sglang-mha, sglang0523-mha, -mha-hnd, llamacpp): with it 1.03-1.09x /
  // 0.94-1.05x as fast (median 1.05x / 1.04x; sglang-mha 0.72x / 0.81x of memcpy with it). Not measured on
  // Intel.
  // @post true where kv_next_rows is declared (null rows past the coordinate's limit or absent slots).
  auto place_next_tile_rows = [&] {
    const int next_level = next_gathered_rows_level(cell);
    if (next_level < 0) return false;
    const Mode& step = cell.modes[static_cast<std::size_t>(cell.loops[static_cast<std::size_t>(next_level)])];
    const Mode& row = cell.modes[static_cast<std::size_t>(cell.tile_target_contiguous)];
    w.line("const char* kv_next_rows[32] = {};  // the next " + step.var + "'s tile's source rows");
    open_next_step(w, cell, next_level);
    w.line("const int64_t kv_next_acrosses = kv_max(INT64_C(0), " + count_of(false, "0", 0) + ");");
    w.open("for (int64_t g = 0; g < kv_next_acrosses; ++g)");
    w.line("const int64_t " + row.var + " = g;");
    if (cell.coords[static_cast<std::size_t>(row.coord)].inverse >= 0) w.line("if (" + slot_absent(cell, row.coord, kInputs) + ") continue;");
    for (const auto& line : row_offset(cell, true, kInputs, "row")) w.line(line);
    w.line("kv_next_rows[static_cast<size_t>(g)] = " + pointer_name(true) + " + row * " + sb + ";");
    w.close();
    w.close();
    return true;
  };
  const std::string next_tile_prefetch = "for (int64_t r = 0; r < 32; ++r) if (kv_next_rows[r] != nullptr) kv_prefetch<64>(kv_next_rows[r] + down0 * " + sb + ");";
  // A block's rows staged whole (staged_rows_box_bytes), where streaming and the block has all 16 rows.
  if (rows_box > 0) {
    const std::int64_t steps = across.extent / 32, row_bytes = across.extent * target_bytes, step_bytes = 32 * source_row * source_bytes;
    const std::string from = pointer_name(true) + " + (" + final_offset(cell, true);
    w.line("bool kv_whole_box = stream && kv_downs == 16;");
    w.line("for (int64_t r = 0; kv_whole_box && r < 16; ++r) kv_whole_box = kv_to_rows[static_cast<size_t>(r)] != nullptr;");
    w.open("if (kv_whole_box)");
    // A box of kStraightBoxBytes or more, where the call's CPU streams such boxes straight (kv_staged_boxes),
    // has the same steps write a whole line of each target row where its slot places it, the next block's
    // step prefetched where the CPU takes it (kv_straight_box_prefetches; see kStraightBoxBytes).
    const bool straight_alternative = rows_box >= kStraightBoxBytes;
    const std::string step = "const int64_t across_at = (" + page_interleaved_step(steps, step_bytes) + ") * 32;";  // both ways' steps
    // The next block's same step, as the staged tiles (print_copy).
    const std::string next_step = "kv_prefetch_run<" + std::to_string(step_bytes) + ">(" + prefetch_address(at, final_offset(cell, true), source_bytes) + " + (" +
                                  next_displacement_name() + " + across_at * " + i64(source_row) + ") * " + sb + ");";
    if (straight_alternative) {
      w.open("if (!" + cpu_choice_load("staged_boxes") + ")");
      w.open("for (int64_t q = 0; q < " + i64(steps) + "; ++q)");
      w.line(step);
      if (prefetch) w.line(step_prefetch(at, straight_box_prefetch(next_step)));
      w.line("kv_transpose_lines16(kv_rows_placed{kv_to_rows.data(), across_at * " + tb + "}, " + from + " + across_at * " + i64(source_row) + ") * " + sb +
             ", " + i64(source_row * source_bytes) + ", true);");
      w.close();
      w.close();
      w.open("else");
    }
    w.line("alignas(64) char kv_box[" + std::to_string(rows_box) + "];");
    w.open("for (int64_t q = 0; q < " + i64(steps) + "; ++q)");
    w.line(step);
    if (prefetch) w.line(step_prefetch(at, next_step));
    w.line("kv_transpose_lines16(kv_rows_apart{kv_box + across_at * " + tb + ", " + i64(row_bytes) + "}, " + from + " + across_at * " + i64(source_row) + ") * " +
           sb + ", " + i64(source_row * source_bytes) + ", false);");
    w.close();
    w.open("for (int64_t r = 0; r < 16; ++r)");
    w.line("char* const row = kv_to_rows[static_cast<size_t>(r)];");
    print_stream_out(w, "row", "kv_box + r * " + i64(row_bytes), std::to_string(row_bytes));
    w.close();
    if (straight_alternative) w.close();
    w.close();
    w.open("else");
  }
  // Dense gathered target rows, strided source rows (has_staged_bursts): outer, chunks of kGatheredChunk
  // source rows; per 32 target rows, the chunk's blocks transposed into a stage on the stack (ordinary
  // stores, it stays in L1), each target row then receiving one burst of the chunk's elements. Written
  // straight, each target row got one 64-byte line per block. A chunk cut short (the extent or the bound
  // check), or 32 target rows with a slot no moved token holds, takes the blocks straight, with ordinary
  // stores, so the stage never writes a byte the move does not own. Leaves its two loops open.
  auto staged_target_chunks = [&]() {
    const std::int64_t chunk = kGatheredChunk;
    declare_stage();
    w.open("for (int64_t across1 = 0; across1 < " + i64(across.extent) + "; across1 += " + std::to_string(chunk) + ")");
    strided_rows(false, "across1", "chunk", chunk, "kv_chunk");
    w.open("for (int64_t down0 = 0; down0 < kv_downs; down0 += 32)");
    w.line("const int64_t downs = kv_min(INT64_C(32), kv_downs - down0);");
    w.line("bool whole = chunk == " + std::to_string(chunk) + " && downs == 32;");
    w.line("for (int64_t r = 0; whole && r < 32; ++r) whole = kv_to_rows[static_cast<size_t>(down0 + r)] != nullptr;");
    w.open("if (whole)");
    stage_and_burst("kv_chunk", "kv_to_rows[static_cast<size_t>(down0 + r)]");
    w.close();
    w.open("else");
    w.line("for (int64_t across0 = 0; across0 < chunk; across0 += 32) kv_transpose_rows_block<" + sb + ">(kv_to_rows.data() + down0, (across1 + across0) * " +
           tb + ", kv_chunk + across0, down0 * " + sb + ", kv_min(INT64_C(32), chunk - across0), downs, false);");
    w.close();
  };
  // Where a staged alternative exists (has_staged_bursts, or stage_gathered_chunks: the same chunks with the
  // gather buffer; or sparse target rows written whole), the call's CPU picks it or the straight blocks.
  const bool staged_with_gather = stage_gathered_chunks(cell, source_bytes);
  const bool sparse_target_rows = cell.tile_target_rows_gathered && !cell.tile_source_rows_gathered && !gathered_rows_dense(cell, false);
  const bool alternative = has_staged_bursts(cell, source_bytes) || staged_with_gather || sparse_target_rows;
  if (alternative) {
    w.open("if (" + cpu_choice_load(sparse_target_rows ? "sparse_rows_whole" : "staged_bursts") + ")");
    if (sparse_target_rows) sparse_rows_whole();
    else if (cell.tile_source_rows_gathered) staged_source_chunks(staged_with_gather);
    else staged_target_chunks();
    w.close();
    w.close();
    w.close();
    w.open("else");
  }
  if (cell.tile_target_rows_gathered) {
    // Outer: 32 source rows (strided, or gathered too); inner: the gathered target rows.
    if (cell.tile_source_rows_gathered) {
      w.open("for (int64_t across0 = 0; across0 < kv_acrosses; across0 += 32)");
      w.line("const int64_t acrosses = kv_min(INT64_C(32), kv_acrosses - across0);");
      w.line("const char* const* const kv_from = kv_from_rows.data() + across0;");
    } else {
      w.open("for (int64_t across0 = 0; across0 < " + i64(across.extent) + "; across0 += 32)");
      strided_rows(false, "across0", "acrosses");
    }
    w.open("for (int64_t down0 = 0; down0 < kv_downs; down0 += 32)");
    w.line("const int64_t downs = kv_min(INT64_C(32), kv_downs - down0);");
    if (!cell.tile_source_rows_gathered)  // the next 64 bytes of each source row, read sequentially
      w.line("if (down0 + 32 < kv_downs) for (int64_t r = 0; r < acrosses; ++r) kv_prefetch<64>(kv_from[r] + (down0 + 32) * " + sb + ");");
    w.line("kv_transpose_rows_block<" + sb + ">(kv_to_rows.data() + down0, across0 * " + tb + ", kv_from, down0 * " + sb +
           ", acrosses, downs, stream, " + (cell.tile_source_rows_gathered ? "kv_to_present && kv_from_present" : "kv_to_present") + ");");
  } else if (!read_gathered_rows_whole(cell, source_bytes) && !staged_with_gather) {  // staged_with_gather's straight blocks: read whole
    // Outer: 32 strided target rows; inner: the gathered source rows, the next block's prefetched.
    const bool next_rows = place_next_tile_rows();
    w.open("for (int64_t down0 = 0; down0 < " + i64(down.extent) + "; down0 += 32)");
    strided_rows(true, "down0", "downs");
    if (next_rows) w.line(next_tile_prefetch);
    w.open("for (int64_t across0 = 0; across0 < kv_acrosses; across0 += 32)");
    w.line("const int64_t acrosses = kv_min(INT64_C(32), kv_acrosses - across0);");
    w.line("for (int64_t r = across0 + 32; r < kv_min(across0 + 64, kv_acrosses); ++r) if (kv_from_rows[static_cast<size_t>(r)] != nullptr) kv_prefetch<64>(kv_from_rows[static_cast<size_t>(r)] + down0 * " + sb + ");");
    w.line("kv_transpose_rows_block<" + sb + ">(kv_to, across0 * " + tb + ", kv_from_rows.data() + across0, down0 * " + sb +
           ", acrosses, downs, stream, kv_from_present);");
  } else if (!cell.riders.empty()) {
    fused_rows_whole();
  } else {
    // Outer: 32 gathered source rows, the next 32 prefetched; inner: 32 strided target rows at a time, so
    // that each gathered row is read whole before the next (see read_gathered_rows_whole).
    // The next 32 rows are prefetched band by band beside the band read where the rows are dense
    // (gathered_rows_dense: the hardware follows rows that abut, and a burst of 1024 prefetches for 32 rows
    // of 2 KiB held up the reads it was meant to speed); sparse rows (K and V interleaved per head, SGLang's
    // page_first host pool with a token's layers between two rows) are prefetched whole, their first page.
    // Measured (256 MiB, two runs each in one process, 1 / 2 threads) on vllm-flash-nhd -> llamacpp-vtrans:
    // 0.61-0.63x / 0.63x of memcpy whole, 0.69x / 0.68-0.69x without, 0.70-0.71x / 0.70-0.71x band by band;
    // band by band on sparse rows lost: vllm-packed-nhd -> llamacpp-vtrans 0.55-0.57 / 0.55-0.56 ->
    // 0.46-0.48 / 0.47, sglang-host-page-first -> llamacpp-vtrans 0.60-0.61 / 0.59 -> 0.57 / 0.56-0.57.
    const std::int64_t row_bytes = down.extent * source_bytes;
    const bool whole_rows_ahead = !gathered_rows_dense(cell, true);
    const std::string next_rows_loop = "for (int64_t r = across0 + 32; r < kv_min(across0 + 64, kv_acrosses); ++r) if (kv_from_rows[static_cast<size_t>(r)] != nullptr) ";
    const bool next_rows = !whole_rows_ahead && place_next_tile_rows();
    w.open("for (int64_t across0 = 0; across0 < kv_acrosses; across0 += 32)");
    w.line("const int64_t acrosses = kv_min(INT64_C(32), kv_acrosses - across0);");
    if (whole_rows_ahead)
      w.line(next_rows_loop + "kv_prefetch<" + std::to_string(std::min<std::int64_t>(row_bytes, 4096)) + ">(kv_from_rows[static_cast<size_t>(r)]);");
    w.open("for (int64_t down0 = 0; down0 < " + i64(down.extent) + "; down0 += 32)");
    strided_rows(true, "down0", "downs");
    if (!whole_rows_ahead)
      w.line(next_rows_loop + "kv_prefetch<" + std::to_string(32 * source_bytes) + ">(kv_from_rows[static_cast<size_t>(r)] + down0 * " + sb + ");");
    if (next_rows) w.line(next_tile_prefetch);
    w.line("kv_transpose_rows_block<" + sb + ">(kv_to, across0 * " + tb + ", kv_from_rows.data() + across0, down0 * " + sb +
           ", acrosses, downs, stream, kv_from_present);");
  }
  w.close();
  w.close();
  if (alternative) w.close();
  if (rows_box > 0) w.close();
}

// How much of a run of `bytes` a copy prefetches ahead: its first page at most. The rest is sequential,
// and kv_stream_copy reads a run of pages in several streams at once, which the hardware follows; a whole
// 32 KiB block prefetched ahead competed with those streams. Measured on an Intel Xeon, vllm-flash-nhd ->
// lmcache-2ltd (random 32 KiB blocks, 256 MiB, 1 / 2 threads): the block prefetched whole 0.74x / 1.26-1.28x
// of memcpy with four streams (0.73-0.74x / 1.24x with one); its first 4 KiB 0.99x / 1.59-1.64x; nothing
// 0.98-1.00x / 1.62-1.64x (0.73-0.74x with one stream either way).
std::int64_t run_prefetch_bytes(std::int64_t bytes) { return std::min<std::int64_t>(bytes, 4096); }

// The bytes of a tile's staged box (see print_copy's whole-line transposes), or 0: a 16-bit tile whose 32
// columns at a time make whole 64-byte target lines, whose target rows abut into one span of at most
// 64 KiB, moved without conversion and without a bound along the columns (the legacy vLLM value cache's
// 16-token rows into a token-major block). The transposes write the box into a buffer on the stack with
// ordinary stores, and the box is then streamed out as one sequential run.
std::int64_t staged_box_bytes(const Cell& cell, int source_bytes, int target_bytes, bool convert) {
  if (convert || source_bytes != 2 || cell.tile_target_contiguous < 0 || cell.tile_target_rows_gathered || cell.tile_source_rows_gathered) return 0;
  const Mode& down = cell.modes[static_cast<std::size_t>(cell.tile_source_contiguous)];
  const bool guard_down = cell.tile_guard >= 0 && down.coord == cell.tile_guard;
  const bool guard_across = cell.tile_guard >= 0 && !guard_down;
  const std::int64_t across = cell.tile_target_extent;
  const std::int64_t target_row = cell.target.stride[static_cast<std::size_t>(cell.tile_source_contiguous)];
  const std::int64_t box_bytes = across * down.extent * target_bytes;
  if (across % 32 != 0 || guard_across || target_row != across || down.extent % 8 != 0 || box_bytes > (std::int64_t{64} << 10)) return 0;
  return box_bytes;
}

// The copy of one run: one fixed-size memcpy (the compiler turns it into vector moves), streaming stores
// for large moves into aligned targets (no read-for-ownership of lines that are overwritten whole), or,
// for a converting move, one conversion per element.
void print_copy(CodeWriter& w, const Cell& cell, int source_bytes, int target_bytes, bool convert, bool prefetch, const RunAddress& at,
                bool stage_deferred, const Plan* plan) {
  const std::string s = address(at, true, final_offset(cell, true), source_bytes);
  const std::string ps = prefetch_address(at, final_offset(cell, true), source_bytes);
  // What this copy reads, prefetch_step's iterations ahead (the next block of a paged source,
  // where the hardware prefetcher does not look; measured: 0.75x -> 0.85x of memcpy for a random 32 KiB-block
  // source).
  // A run's prefetch follows the CPU's policy on long spans (kv_prefetch_run); a tile's is always issued.
  auto prefetch_span = [&](std::int64_t bytes, bool run) {
    if (!prefetch) return;
    const std::string line = std::string(run ? "kv_prefetch_run<" : "kv_prefetch<") + std::to_string(bytes) + ">(" + ps + " + " +
                             next_displacement_name() + " * " + std::to_string(source_bytes) + ");";
    // A run shorter than a line prefetches only when it holds a line's first byte: one prefetch per line,
    // not one per run (measured on vllm-paged-legacy's 16-byte key runs: about 10% of the key move).
    if (bytes < 64) w.line(step_prefetch(at, "if ((reinterpret_cast<uintptr_t>(" + s + ") & 63) < " + std::to_string(bytes) + ") " + line));
    else w.line(step_prefetch(at, line));
  };
  // A tile's `rows` source rows of `row_elements`, `row_stride` elements apart from `from` (elements past
  // this block's start), one block ahead: one span where the rows nearly abut, else row by row. A span
  // over rows far apart fetches what is never read (measured: SGLang's page_first host pool holds a
  // token's layers together, so a 16-row V tile of 256-byte rows spans 960 KiB; prefetched as one span
  // per head, sglang-host-page-first -> vllm-paged-legacy ran at 0.06x of memcpy).
  auto prefetch_rows = [&](const std::string& from, std::int64_t rows, std::int64_t row_stride, std::int64_t row_elements) {
    const std::int64_t span = (rows - 1) * row_stride + row_elements;
    if (!prefetch) return;
    if (span * source_bytes < 64 || span <= 2 * rows * row_elements) {
      if (from.empty()) prefetch_span(span * source_bytes, false);
      else w.line(step_prefetch(at, "kv_prefetch<" + std::to_string(span * source_bytes) + ">(" + ps + " + (" + next_displacement_name() + from + ") * " +
                                        std::to_string(source_bytes) + ");"));
      return;
    }
    w.line(step_prefetch(at, "if (" + cpu_choice_load("row_prefetches") + ") for (int64_t r = 0; r < " + i64(rows) + "; ++r) kv_prefetch<" + std::to_string(row_elements * source_bytes) + ">(" + ps + " + (" +
           next_displacement_name() + from + " + r * " + i64(row_stride) + ") * " + std::to_string(source_bytes) + ");"));
  };
  const std::string d = address(at, false, final_offset(cell, false), target_bytes);
  if (cell.tile_target_rows_gathered || cell.tile_source_rows_gathered) {
    print_gathered_tile(w, cell, source_bytes, target_bytes, prefetch, at, plan);
    return;
  }
  if (cell.tile_target_contiguous >= 0) {
    Mode across = cell.modes[static_cast<std::size_t>(cell.tile_target_contiguous)];
    across.extent = cell.tile_target_extent;  // with the coalesced modes
    const Mode& down = cell.modes[static_cast<std::size_t>(cell.tile_source_contiguous)];
    const std::int64_t source_row = cell.source.stride[static_cast<std::size_t>(cell.tile_target_contiguous)];
    const std::int64_t target_row = cell.target.stride[static_cast<std::size_t>(cell.tile_source_contiguous)];
    const bool lines = !convert && source_bytes == 2 && across.extent % 32 == 0;
    // Target rows of 16 columns that abut (32-byte rows, two to a line): 16 x 32 boxes of whole lines,
    // streamed, when all 16 columns are moved (below).
    const bool columns16 = !convert && source_bytes == 2 && across.extent == 16 && target_row == 16 && down.extent % 32 == 0;
    // Their tile's rows prefetched a box's share at a time, beside each box, rather than all at once before
    // the first (as the staged boxes prefetch the next block's step beside each step). Measured on an AMD
    // EPYC of Zen 4, 256 MiB, 1 / 2 threads, the two ways switched in one kernel: over the 33 kernels into
    // vllm-paged-legacy's value cache (two processes of 5 interleaved repetitions) by the box 1.03x / 1.03x
    // as fast at median, faster in 18 / 17-18 of 23 distinct kernels: the HND sources, a head's 4 KiB page a
    // tile, 1.16-1.33x / 1.10-1.23x (flashinfer-hnd 0.77x / 0.90x of memcpy by the box, dynamo-universal
    // 1.30-1.33x / 1.15-1.23x), the rest 0.95-1.07x / 0.94-1.11x but one run of one pair
    // (sglang-host-layer-first 0.84x at one thread, 1.01x in the other process). The next block's lines of
    // each box (16 of 64 bytes) in place of the box's share of the page read the same. Not measured on
    // Intel.
    const std::int64_t boxes16 = columns16 ? down.extent / 32 : 0;
    const bool prefetch_by_box = columns16 && across.extent % boxes16 == 0;
    if (!lines && !prefetch_by_box) prefetch_rows("", across.extent, source_row, down.extent);
    w.line("// " + down.var + " is contiguous in the source, " + across.var + " in the target: 8 x 8 tiles.");
    // The bound-checked coordinate (the token) may stop inside the tile, along either axis.
    const bool guard_down = cell.tile_guard >= 0 && down.coord == cell.tile_guard;
    const bool guard_across = cell.tile_guard >= 0 && !guard_down;
    auto remaining = [&](int mode, const std::string& at) {  // positions left along `mode` from `at`
      return coordinate_limit(cell, cell.tile_guard, kInputs) + " - (" + coordinate_base(cell, cell.tile_guard, mode) + " + " + at + ") + 1";
    };
    std::string across_start = "0";
    if (lines) {
      // Whole 64-byte target lines, 32 columns by 8 rows at a time, streamed, when every row is moved: read
      // in the source's order (all rows of 32 columns before the next 32), with the next block's same
      // columns prefetched beside them (measured on vllm-paged-legacy -> vllm-flash-nhd, one thread:
      // 0.47x -> 0.53x of memcpy against rows outermost and the block prefetched at once).
      const std::string across_lines =
          guard_across ? "kv_min(" + i64(across.extent) + ", " + remaining(cell.tile_target_contiguous, "0") + ")" : i64(across.extent);
      const std::string every_row = guard_down ? " && " + remaining(cell.tile_source_contiguous, "0") + " >= " + i64(down.extent) : "";
      // Staged (staged_box_bytes, with the cell's two stage buffers declared by print_cell): the transposes
      // write the box into one buffer with ordinary stores (it stays in L1), reading the source's pages four
      // at a time (page_interleaved_step), while the previous box, staged in the other buffer, is streamed
      // out a piece per step, so that its streaming stores drain beside the transposes instead of in a
      // burst of their own. The box stays pending until the next staged box, or the end of the cell.
      // Measured on the vllm-paged-legacy value move alone, one process, one thread (GiB/s over the pair's
      // bytes): the box streamed at once, the source read page after page and the next block prefetched
      // 13.2-13.3; in four page streams without the prefetch 13.6-14.0; streamed a box behind 14.2-14.8;
      // both 15.4-15.6 (against 8.0-9.5 before staging at all, with 8 x 8 tiles).
      const std::int64_t box_bytes = staged_box_bytes(cell, source_bytes, target_bytes, convert);
      const bool staged = box_bytes > 0 && stage_deferred;
      w.line("int64_t across_done = 0;");
      w.open("if (stream" + every_row + ")");
      // Sixteen rows at a time where the block has them (one AVX2 pass covers both 8-row bands).
      const bool sixteen = down.extent % 16 == 0;
      auto transposes = [&](const std::string& into, const std::string& at, bool streamed) {
        w.open("for (int64_t down0 = 0; down0 < " + i64(down.extent) + "; down0 += " + (sixteen ? "16" : "8") + ")");
        w.line(std::string(sixteen ? "kv_transpose_lines16(" : "kv_transpose_lines(") + "kv_rows_apart{" + into + " + (" + at + " + down0 * " + i64(target_row) + ") * " +
               std::to_string(target_bytes) + ", " + i64(target_row * target_bytes) + "}, " + s + " + (" + at + " * " + i64(source_row) + " + down0) * " +
               std::to_string(source_bytes) + ", " + i64(source_row * source_bytes) + (streamed ? ", true);" : ", false);"));
        w.close();
      };
      if (staged) {
        // Every column is staged (across.extent is a multiple of 32, no guard along it): the box is whole.
        // A box of kStraightBoxBytes or more, where the call's CPU streams such boxes straight
        // (kv_staged_boxes), has the same steps write the target: the source's pages read four at a time as
        // staged, the next block's step prefetched where the CPU takes it (kv_straight_box_prefetches).
        const std::int64_t steps = across.extent / 32, piece = box_bytes / steps;
        const std::string step = "const int64_t across_at = (" + page_interleaved_step(steps, 32 * source_row * source_bytes) + ") * 32;";
        // The next block's same step (a long span: kv_prefetch_run follows the CPU's policy).
        const std::string next_step = "kv_prefetch_run<" + std::to_string(32 * source_row * source_bytes) + ">(" + ps + " + (" + next_displacement_name() +
                                      " + across_at * " + i64(source_row) + ") * " + std::to_string(source_bytes) + ");";
        const bool straight_alternative = box_bytes >= kStraightBoxBytes;
        if (straight_alternative) {
          w.open("if (!" + cpu_choice_load("staged_boxes") + ")");
          w.open("for (int64_t q = 0; q < " + i64(steps) + "; ++q)");
          w.line(step);
          if (prefetch) w.line(step_prefetch(at, straight_box_prefetch(next_step)));
          transposes(d, "across_at", true);
          w.close();
          w.close();
          w.open("else");
        }
        w.line("char* const kv_stage = kv_stages[kv_half];");
        w.open("for (int64_t q = 0; q < " + i64(steps) + "; ++q)");
        w.line(step);
        // The next block's same step prefetched (a long span: kv_prefetch_run follows the CPU's policy), or
        // the next layers' where the block is too far ahead (prefetch_step's next instance).
        // Measured on an Intel Xeon, 256 MiB, three runs of `--ab` in one process each (the prefetch
        // switched alone), 1 / 2 threads: out of vllm-paged-legacy into head-major targets, whose 4 KiB
        // boxes read one source page each, hf-dynamic 1.15x / 1.15x, flashinfer-hnd 1.15 / 1.13,
        // vllm-flash-hnd 1.10 / 1.11, dynamo-universal 1.07 / 1.09 (the next block then; the layer two
        // ahead since: 1.16 / 1.16 more); into token-major 32 KiB boxes, which
        // read four pages at once, 0.98-1.06 (vllm-flash-nhd 0.98 / 1.02, lmcache-2ltd 1.06 / 1.03).
        if (prefetch) w.line(step_prefetch(at, next_step));
        transposes("kv_stage", "across_at", false);
        w.line("if (kv_pending != nullptr) kv_stream_copy<" + std::to_string(piece) + ">(kv_pending + q * " + i64(piece) + ", kv_stages[kv_half ^ 1] + q * " +
               i64(piece) + ");");
        w.close();
        w.line("if (reinterpret_cast<uintptr_t>(" + d + ") % 16 == 0) kv_pending = " + d + ", kv_half ^= 1;");
        w.line("else std::memcpy(" + d + ", kv_stage, " + std::to_string(box_bytes) + "), kv_pending = nullptr;");
        if (straight_alternative) w.close();
        w.line("across_done = " + i64(across.extent) + ";");
      } else {
        w.open("for (const int64_t across_lines = " + across_lines + "; across_done + 32 <= across_lines; across_done += 32)");
        prefetch_rows(" + across_done * " + i64(source_row), 32, source_row, down.extent);
        transposes(d, "across_done", true);
        w.close();
      }
      w.close();
      across_start = "across_done";
    }
    std::string down_start = "0";
    if (columns16) {
      const std::string every_column = guard_across ? " && " + remaining(cell.tile_target_contiguous, "0") + " >= 16" : "";
      const std::string down_rows =
          guard_down ? "kv_min(" + i64(down.extent) + ", " + remaining(cell.tile_source_contiguous, "0") + ")" : i64(down.extent);
      w.line("int64_t down_done = 0;");
      w.open("if (stream" + every_column + ")");
      w.open("for (const int64_t down_rows = " + down_rows + "; down_done + 32 <= down_rows; down_done += 32)");
      const std::int64_t rows_a_box = across.extent / std::max<std::int64_t>(boxes16, 1);
      if (prefetch_by_box) prefetch_rows(" + down_done / 32 * " + i64(rows_a_box * source_row), rows_a_box, source_row, down.extent);
      w.line("kv_transpose_columns16(" + d + " + down_done * " + i64(16 * target_bytes) + ", " + s + " + down_done * " +
             std::to_string(source_bytes) + ", " + i64(source_row * source_bytes) + ", true);");
      w.close();
      w.close();
      down_start = "down_done";
      if (prefetch_by_box && prefetch) {  // no box streamed: the tiles' rows at once, as elsewhere
        w.open("if (down_done == 0)");
        prefetch_rows("", across.extent, source_row, down.extent);
        w.close();
      }
    }
    // The rest (all of it without whole lines): tile by tile, rows outermost.
    w.open("for (int64_t down0 = " + down_start + "; down0 < " + i64(down.extent) + "; down0 += 8)");
    std::string downs = "8", acrosses = "8";
    if (guard_down) {
      w.line("const int64_t downs = kv_min(INT64_C(8), " + remaining(cell.tile_source_contiguous, "down0") + ");");
      w.line("if (downs <= 0) break;");
      downs = "downs";
    }
    if (guard_across) acrosses = "acrosses";
    w.open("for (int64_t across0 = " + across_start + "; across0 < " + i64(across.extent) + "; across0 += 8)");
    if (acrosses == "acrosses") {
      std::string first = coordinate_base(cell, cell.tile_guard, cell.tile_target_contiguous) + " + across0";
      w.line("const int64_t acrosses = kv_min(INT64_C(8), " + coordinate_limit(cell, cell.tile_guard, kInputs) + " - (" + first + ") + 1);");
      w.line("if (acrosses <= 0) break;");
    }
    w.line(std::string(convert ? "kv_transpose_tile_converting<" + std::to_string(source_bytes) + ", " + std::to_string(target_bytes) + ">("
                               : "kv_transpose_tile<" + std::to_string(source_bytes) + ">(") + d + " + (across0 + down0 * " + i64(target_row) + ") * " +
           std::to_string(target_bytes) + ", " + i64(target_row * target_bytes) + ", " + s + " + (across0 * " + i64(source_row) +
           " + down0) * " + std::to_string(source_bytes) + ", " + i64(source_row * source_bytes) + ", " + acrosses + ", " + downs +
           ", false);  // ordinary stores: a tile's 8 rows lie in 8 lines, which streaming stores would flush half-written");
    w.close();
    w.close();
    return;
  }
  const std::int64_t bytes = cell.run_elements * source_bytes;
  prefetch_span(run_prefetch_bytes(bytes), true);
  if (!convert) {
    if (target_runs_aligned(cell, target_bytes) && bytes % 16 == 0) {
      w.line("if (stream) kv_stream_copy<" + std::to_string(bytes) + ">(" + d + ", " + s + ");");
      w.line("else kv_copy<" + std::to_string(bytes) + ">(" + d + ", " + s + ");");
    } else {
      w.line("std::memcpy(" + d + ", " + s + ", " + std::to_string(bytes) + ");");
    }
    return;
  }
  w.line("const char* const from = " + s + ";");
  w.line("char* const to = " + d + ";");
  w.open("for (int64_t e = 0; e < " + i64(cell.run_elements) + "; ++e)");
  w.line("uint32_t bits = 0;");
  w.line("std::memcpy(&bits, from + e * " + std::to_string(source_bytes) + ", " + std::to_string(source_bytes) + ");");
  w.line("const uint32_t out = kv_convert(bits);");
  w.line("std::memcpy(to + e * " + std::to_string(target_bytes) + ", &out, " + std::to_string(target_bytes) + ");");
  w.close();
}

// The transpose of a tile with an element conversion (a NOT_EXACT move), element by element.
const char* kConvertingTile = R"(template <int FROM, int TO>
[[maybe_unused]] static inline void kv_transpose_tile_converting(char* to, int64_t to_row, const char* from, int64_t from_row,
                                                                 int64_t as, int64_t bs, bool) {
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t a = 0; a < as; ++a) {
      uint32_t bits = 0;
      std::memcpy(&bits, from + a * from_row + b * FROM, FROM);
      const uint32_t out = kv_convert(bits);
      std::memcpy(to + b * to_row + a * TO, &out, TO);
    }
}

)";

// Copies for the planned kernels: streaming runs and 8 x 8 transposes (SSE2 on x86-64, portable otherwise).
const char* kCopies = R"(// Into the second-level cache, not the first (locality 1: prefetcht2 on x86-64): a prefetch into L1 holds
// one of its few fill buffers until the line arrives, and a run's own loads then wait for buffers. Measured
// on an Intel Xeon (48 KiB L1, 2 MiB L2), 256 MiB, one thread, runs of 256 B / 1 KiB / 2 KiB / 4 KiB taken
// at random within 4 MiB, each prefetched whole 16 KiB ahead: 6.1 / 6.5 / 6.7 / 8.5 GiB/s into L1, 7.8 /
// 8.0 / 8.2 / 8.6 into L2 (memcpy 10.8); in kernels, vllm-flash-nhd -> sglang-mha 0.74x -> 0.91x of
// memcpy, -> vllm-flash-hnd 0.72x -> 0.80x.
template <int64_t BYTES>
[[maybe_unused]] static inline void kv_prefetch(const char* p) {
  for (int64_t k = 0; k < BYTES; k += 64) __builtin_prefetch(p + k, 0, 1);
}

// A run's first bytes, ahead: spans of kv_long_prefetch_bytes or more (a run's first 1-4 KiB, a staged
// tile's next step) only where the call's CPU gains from them (kv_long_prefetches, set per call by
// kv_run_part). A tile's rows (kv_prefetch) are prefetched on every CPU where they abut (rows far apart,
// prefetched row by row, follow kv_row_prefetches): the transposes compute between their loads and gain
// from them where copies did not.
// Measured on an AMD EPYC (Zen 3, KVM), 256 MiB, 1 / 2 threads, each head's 4 KiB page prefetched a block
// ahead into vllm-paged-legacy: from flashinfer-hnd (three runs) 0.50-0.56x /
// 0.55-0.64x of memcpy without, 0.56-0.59x / 0.72x with; from trtllm-pool (two) 0.50-0.53 / 0.59-0.62 ->
// 0.58 / 0.64-0.72; from vllm-flash-hnd (two) 0.51-0.56 / 0.67-0.75 -> 0.61-0.64 / 0.70-0.79. From
// vllm033-bhlnc (a 7.75 KiB span over a head's rows in each layer) it made no difference.
template <int64_t BYTES>
[[maybe_unused]] static inline void kv_prefetch_run(const char* p) {
  if (BYTES >= kv_long_prefetch_bytes && !kv_long_prefetches.load(std::memory_order_relaxed)) return;
  if (BYTES < kv_long_prefetch_bytes && !kv_short_prefetches.load(std::memory_order_relaxed)) return;
  kv_prefetch<BYTES>(p);
}

// Where stream s of several copied at once, line by line, is at line `line` of its SPAN bytes: kv_page_stagger
// * s bytes further on, wrapping within the span. Streams in step at the same offset of their pages (each
// load at the low 12 address bits of the stores just issued to the stream before: 4 KiB aliasing, by
// the look of it) crawled on an AMD
// EPYC (Zen 3, KVM), 256 MiB in 16-64 KiB blocks taken at random within 4 MiB, four page streams, 32-byte
// streaming stores, GiB/s at one thread: in step 2.5-3.5, staggered by 64 / 256 / 1024 bytes 8.2-8.5 /
// 12.7-13.6 / 11.9-12.7, one stream 12.9-13.9 (memcpy of the whole 14.2-15.4); four read streams with the
// writes in one 14.2, the writes in four with the reads in one 11.6: the two in step are what crawls. In
// kernels (one process, 1 / 2 threads): flashinfer-hnd -> flashinfer072-hnd (4 KiB blocks four at once)
// 0.25x / 0.29x of memcpy in step, vllm-flash-nhd -> lmcache-2ltd (32 KiB runs) 0.28x / 0.36x.
constexpr int64_t kv_page_stagger = 256;
template <int64_t SPAN>
[[maybe_unused]] static inline int64_t kv_staggered(int64_t line, int64_t s) { return (line + s * kv_page_stagger) % SPAN; }

// Keeps the streaming stores before it ahead of those after it in the compiler's schedule (an empty asm
// that clobbers memory; the CPU itself keeps stores in program order). Called after each line's stores, so
// that a line is written whole before the next is begun: left free, GCC interleaved two lines' halves in
// kv_stream_copy's 128-byte step (k + 32, k + 64, k, k + 96), leaving two write-combining buffers half
// full at a time. Measured on an Ice Lake-class Xeon, one process each, 5-7 interleaved repetitions, 1 / 2
// threads, every kernel's helpers with it against without: flashinfer-hnd -> sglang-host-layer-first
// (256-byte runs, a box read in four quarters) 1.25x / 1.20x as fast, flashinfer-hnd -> lmcache056-2ltd
// 1.16x / 1.36x (0.82x / 0.77x of memcpy -> 0.96x / 1.05x), hf520-dynamic ->
// sglang0523-host-page-first-direct 1.18x / 1.41x; 21 pairs at random 1.02x / 1.05x (geometric mean), the
// ten of them that read slower 0.98-1.18x / 0.98-1.41x when timed again; ten transposes into and out of
// the legacy and llama.cpp caches 0.92-1.28x / 0.96-1.47x (the legacy cache into vllm-flash-nhd 0.92x /
// 1.02x, 1.03x / 1.00x timed again), llamacpp-vtrans -> vllm-packed-nhd 1.10x / 1.12x. A line written in
// one store (AVX-512) needs none.
[[maybe_unused]] static inline void kv_line_stored() {
#if defined(__GNUC__) || defined(__clang__)
  __asm__ volatile("" ::: "memory");
#endif
}

// A run copied with streaming stores (no read-for-ownership of the lines it overwrites), into a target that
// may start off a line: a run's part lines are streamed too. Measured with every target 16 bytes past a
// page (np.empty's large arrays), 256 MiB, one thread: hf-dynamic -> sglang-mha (256-byte runs in the
// source's order, neighbours in a target line written far apart) 0.94-1.06x of memcpy, against 0.60x
// with the part lines written by ordinary stores and 0.50-0.54x not streaming at all (what kernels with a
// cell read in the source's order did there before: their prologue asked for 64-byte aligned targets).
// Measured before such nests took the target's order off a line (print_variant), which now writes a
// line's neighbouring runs one after the other.
// `page_streams` off copies a run of pages as one forward stream instead (whole blocks walked in the
// source's physical order, kv_blocks_in_order: there the next block follows this one in memory).
// @pre `to` is 16-byte aligned, BYTES a multiple of 16.
template <int64_t BYTES>
static inline void kv_stream_copy(char* to, const char* from, bool page_streams = true) {
  (void)page_streams;
#if KV_AVX2
  // Four 32-byte streams per step: at one thread the copy loop's own instructions, not memory, bounded the
  // 16-byte loop (measured on llamacpp -> sglang-mha, 2 KiB runs: 0.56x -> 0.70x of memcpy).
  // 32-byte streaming stores need 32-byte aligned targets; the caller guarantees 16.
  const bool aligned = reinterpret_cast<uintptr_t>(to) % 32 == 0;
  int64_t k = aligned ? 0 : 16;
  if (k != 0) _mm_stream_si128(reinterpret_cast<__m128i*>(to), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
  if constexpr (BYTES >= 8192) {
    // A run of pages: two or four 4 KiB streams at once, line by line, as glibc's memcpy copies large
    // blocks. One stream leaves one core's reads waiting on one page at a time. Measured on an Intel Xeon,
    // 256 MiB in runs taken at random within 4 MiB, one thread: 8 KiB runs 7.8-8.0 GiB/s -> 9.2-9.4 (two
    // streams, each prefetched 512 bytes ahead), 16 / 32 / 64 KiB 7.8-8.1 -> 9.9-10.7 (four streams;
    // memcpy of the whole 9.7-10.3). Stream s runs kv_page_stagger * s bytes ahead within its page
    // (kv_staggered).
    constexpr int64_t streams = BYTES >= 16384 ? 4 : 2, group = streams * 4096;
    if (aligned && page_streams)
      for (; k + group <= BYTES; k += group)
        for (int64_t line = 0; line < 4096; line += 64) {
          if (streams == 2) {
            KV_UNROLL for (int64_t s = 0; s < streams; ++s) {
              const int64_t ahead = kv_staggered<4096>(line, s) + 512;
              if (ahead < 4096) kv_prefetch<64>(from + k + s * 4096 + ahead);
            }
          }
          KV_UNROLL for (int64_t s = 0; s < streams; ++s) {
            const int64_t at = k + s * 4096 + kv_staggered<4096>(line, s);
            const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + at));
            const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + at + 32));
            _mm256_stream_si256(reinterpret_cast<__m256i*>(to + at), a);
            _mm256_stream_si256(reinterpret_cast<__m256i*>(to + at + 32), b);
            kv_line_stored();
          }
        }
  }
  for (; k + 128 <= BYTES; k += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k + 32), b);
    kv_line_stored();
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k + 96), d);
    kv_line_stored();
  }
  for (; k + 32 <= BYTES; k += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k)));
    kv_line_stored();
  }
  for (; k < BYTES; k += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k)));
    kv_line_stored();
  }
#elif defined(__SSE2__)
  for (int64_t k = 0; k < BYTES; k += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k)));
    kv_line_stored();
  }
#else
  std::memcpy(to, from, BYTES);
#endif
}

// Four runs of BYTES copied at once, a line of each in turn, with streaming stores: one core reading one
// page after another waits on each page's first lines (the hardware prefetcher stops at pages), four at once
// keep it busy, as kv_stream_copy does within a run of pages (measured: see whole_blocks_at_once). Run s
// is staggered kv_page_stagger * s bytes on (kv_staggered): the runs are blocks at the same offset of
// their pages. Runs under two pages where the call's CPU copies them one at a time (kv_blocks_at_once) are
// one kv_stream_copy each instead.
// @pre every to[s] is 16-byte aligned; BYTES a multiple of 64.
template <int64_t BYTES>
[[maybe_unused]] static inline void kv_stream_copy4(char* const* to, const char* const* from) {
  if (BYTES < 8192 && !kv_blocks_at_once.load(std::memory_order_relaxed)) {
    for (int s = 0; s < 4; ++s) kv_stream_copy<BYTES>(to[s], from[s]);
    return;
  }
#if defined(__SSE2__)
  for (int64_t line = 0; line < BYTES; line += 64) {
    KV_UNROLL for (int s = 0; s < 4; ++s) {
      const int64_t at = kv_staggered<BYTES>(line, s);
      KV_UNROLL for (int64_t k = 0; k < 64; k += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(to[s] + at + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from[s] + at + k)));
      kv_line_stored();
    }
  }
#else
  for (int s = 0; s < 4; ++s) std::memcpy(to[s], from[s], BYTES);
#endif
}

// The ordinary copy of a run that could have been streamed. Where the target lies less than 256 bytes past
// the source modulo 4 KiB, backward in vector steps: memcpy copies such a run forward, and each load then
// waits for the store just issued with the same low 12 address bits (4 KiB aliasing; glibc's rep movsb
// there). Measured on lmcache-2ltd -> vllm-flash-nhd with every target 16 bytes past a page, when such
// kernels did not stream into targets off a line (they do now: kv_stream_copy): 94 -> 28 ms a move.
template <int64_t BYTES>
[[maybe_unused]] static inline void kv_copy(char* to, const char* from) {
  // The distance modulo 4 KiB in 1..255 (unsigned: a distance of 0 wraps past 255 and copies forward).
  if (BYTES >= 256 && (reinterpret_cast<uintptr_t>(to) - reinterpret_cast<uintptr_t>(from)) % 4096 - 1 < 255) {
    int64_t k = BYTES;
#if KV_AVX2
    for (; k >= 32; k -= 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + k - 32), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k - 32)));
#elif defined(__SSE2__)
    for (; k >= 16; k -= 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(to + k - 16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k - 16)));
#endif
    std::memcpy(to, from, static_cast<size_t>(k));
    return;
  }
  std::memcpy(to, from, BYTES);
}

// SIDE x SIDE 16-byte runs transposed one by one: to[p * to_pair + 16 * i] = from[i * from_pair + 16 * p]
// for p, i < SIDE, a target line's runs one after another (the streaming stores of a line then combine).
// kv_run_pairs16's and kv_run_quads16's baseline.
template <int SIDE>
[[maybe_unused]] static inline void kv_runs_transposed16(char* to, int64_t to_pair, const char* from, int64_t from_pair, bool stream) {
  KV_UNROLL for (int p = 0; p < SIDE; ++p) {
    KV_UNROLL for (int i = 0; i < SIDE; ++i) {
      char* run = to + p * to_pair + 16 * i;
      const char* from_run = from + i * from_pair + 16 * p;
      if (stream && reinterpret_cast<uintptr_t>(run) % 16 == 0) kv_stream_copy<16>(run, from_run);
      else std::memcpy(run, from_run, 16);
    }
  }
}

// Four 16-byte runs that form a 2 x 2 transpose: to[p * to_pair + 16 * i] = from[i * from_pair + 16 * p]
// for p, i < 2. With AVX2 two 32-byte loads and two 32-byte stores, not four of each (measured: see
// emit/run_pairs.hpp).
[[maybe_unused]] static inline void kv_run_pairs16(char* to, int64_t to_pair, const char* from, int64_t from_pair, bool stream) {
#if KV_AVX2
  const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  const __m256i second = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + from_pair));
  const __m256i row0 = _mm256_permute2x128_si256(first, second, 0x20), row1 = _mm256_permute2x128_si256(first, second, 0x31);
  if (stream && reinterpret_cast<uintptr_t>(to) % 32 == 0 && reinterpret_cast<uintptr_t>(to + to_pair) % 32 == 0) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to), row0);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + to_pair), row1);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), row0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + to_pair), row1);
  }
#else
  kv_runs_transposed16<2>(to, to_pair, from, from_pair, stream);
#endif
}

// Sixteen 16-byte runs that form a 4 x 4 transpose: to[p * to_pair + 16 * i] = from[i * from_pair + 16 * p]
// for p, i < 4: four source lines in, four target lines out (emit/run_pairs.hpp's run_group_side). With AVX2
// eight 32-byte loads, lane permutes and stores; otherwise sixteen 16-byte copies.
[[maybe_unused]] static inline void kv_run_quads16(char* to, int64_t to_pair, const char* from, int64_t from_pair, bool stream) {
#if KV_AVX2
  __m256i low[4], high[4];  // from line i: runs p = 0, 1 / p = 2, 3
  KV_UNROLL for (int i = 0; i < 4; ++i) {
    low[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i * from_pair));
    high[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i * from_pair + 32));
  }
  __m256i rows[4][2];  // target line p: runs i = 0, 1 / i = 2, 3
  rows[0][0] = _mm256_permute2x128_si256(low[0], low[1], 0x20);
  rows[0][1] = _mm256_permute2x128_si256(low[2], low[3], 0x20);
  rows[1][0] = _mm256_permute2x128_si256(low[0], low[1], 0x31);
  rows[1][1] = _mm256_permute2x128_si256(low[2], low[3], 0x31);
  rows[2][0] = _mm256_permute2x128_si256(high[0], high[1], 0x20);
  rows[2][1] = _mm256_permute2x128_si256(high[2], high[3], 0x20);
  rows[3][0] = _mm256_permute2x128_si256(high[0], high[1], 0x31);
  rows[3][1] = _mm256_permute2x128_si256(high[2], high[3], 0x31);
  if (stream && reinterpret_cast<uintptr_t>(to) % 32 == 0 && to_pair % 32 == 0) {
    KV_UNROLL for (int p = 0; p < 4; ++p) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(to + p * to_pair), rows[p][0]);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(to + p * to_pair + 32), rows[p][1]);
      kv_line_stored();
    }
  } else {
    KV_UNROLL for (int p = 0; p < 4; ++p) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + p * to_pair), rows[p][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + p * to_pair + 32), rows[p][1]);
    }
  }
#else
  kv_runs_transposed16<4>(to, to_pair, from, from_pair, stream);
#endif
}

#if defined(__SSE2__)
// c[b] = column b of the 8 x 8 tile of 16-bit elements whose rows are r[a].
[[maybe_unused]] static inline void kv_transpose8x8(const __m128i r[8], __m128i c[8]) {
  __m128i t[8], u[8];
  KV_UNROLL for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  u[0] = _mm_unpacklo_epi32(t[0], t[2]); u[1] = _mm_unpackhi_epi32(t[0], t[2]);
  u[2] = _mm_unpacklo_epi32(t[1], t[3]); u[3] = _mm_unpackhi_epi32(t[1], t[3]);
  u[4] = _mm_unpacklo_epi32(t[4], t[6]); u[5] = _mm_unpackhi_epi32(t[4], t[6]);
  u[6] = _mm_unpacklo_epi32(t[5], t[7]); u[7] = _mm_unpackhi_epi32(t[5], t[7]);
  KV_UNROLL for (int i = 0; i < 4; ++i) {
    c[2 * i] = _mm_unpacklo_epi64(u[i], u[i + 4]);
    c[2 * i + 1] = _mm_unpackhi_epi64(u[i], u[i + 4]);
  }
}

// c[b] = column b of the 8 x 8 tile of 16-bit elements whose rows a start `from_row` bytes apart.
[[maybe_unused]] static inline void kv_transpose8x8_registers(const char* from, int64_t from_row, __m128i c[8]) {
  __m128i r[8];
  KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + a * from_row));
  kv_transpose8x8(r, c);
}
#endif

#if KV_AVX2
// Two 8 x 8 tiles of 16-bit elements at once: each source row a holds 16 elements along b, and the same
// unpacks as kv_transpose8x8_registers run in both 128-bit lanes, so c[b] holds column b in its low lane
// and column b + 8 in its high lane.
static inline void kv_transpose8x16(const __m256i r[8], __m256i c[8]) {
  __m256i t[8], u[8];
  KV_UNROLL for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  u[0] = _mm256_unpacklo_epi32(t[0], t[2]); u[1] = _mm256_unpackhi_epi32(t[0], t[2]);
  u[2] = _mm256_unpacklo_epi32(t[1], t[3]); u[3] = _mm256_unpackhi_epi32(t[1], t[3]);
  u[4] = _mm256_unpacklo_epi32(t[4], t[6]); u[5] = _mm256_unpackhi_epi32(t[4], t[6]);
  u[6] = _mm256_unpacklo_epi32(t[5], t[7]); u[7] = _mm256_unpackhi_epi32(t[5], t[7]);
  KV_UNROLL for (int i = 0; i < 4; ++i) {
    c[2 * i] = _mm256_unpacklo_epi64(u[i], u[i + 4]);
    c[2 * i + 1] = _mm256_unpackhi_epi64(u[i], u[i + 4]);
  }
}

// kv_transpose8x16 of the rows starting `from_row` bytes apart.
static inline void kv_transpose8x16_registers(const char* from, int64_t from_row, __m256i c[8]) {
  __m256i r[8];
  KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + a * from_row));
  kv_transpose8x16(r, c);
}
#endif

// to[b] + to_at + a * ELEMENT = from[a] + from_at + b * ELEMENT for a < as, b < bs: a tile whose rows are
// placed one by one (gathered rows). A null row is a slot no moved token holds, and is skipped.
template <int ELEMENT>
[[maybe_unused]] static inline void kv_transpose_rows(char* const* to, int64_t to_at, const char* const* from, int64_t from_at,
                                                      int64_t as, int64_t bs) {
#if defined(__SSE2__)
  if (ELEMENT == 2 && as == 8 && bs == 8) {
    bool whole = true;
    KV_UNROLL for (int k = 0; k < 8; ++k) whole = whole && to[k] != nullptr && from[k] != nullptr;
    if (whole) {
      __m128i r[8], c[8];
      KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from[a] + from_at));
      kv_transpose8x8(r, c);
      KV_UNROLL for (int b = 0; b < 8; ++b) _mm_storeu_si128(reinterpret_cast<__m128i*>(to[b] + to_at), c[b]);
      return;
    }
  }
#endif
  for (int64_t b = 0; b < bs; ++b) {
    if (to[b] == nullptr) continue;
    for (int64_t a = 0; a < as; ++a)
      if (from[a] != nullptr) std::memcpy(to[b] + to_at + a * ELEMENT, from[a] + from_at + b * ELEMENT, ELEMENT);
  }
}

// A 16-bit block of 8 * GROUPS source rows, every one present (GROUPS 2 or 4), by bs target rows (a
// multiple of 8), each target row receiving 16 * GROUPS bytes: a whole 64-byte line from 32 source rows,
// half of one from 16 (a 16-token block's tokens gathered one by one into a token-fastest cache: SGLang's
// token pool or llama.cpp's cells into vllm-paged-legacy's values), streamed when aligned to them (no
// read-for-ownership: a target row's halves written apart by ordinary stores each read the line first).
#if defined(__SSE2__)
template <int GROUPS>
[[maybe_unused]] static inline void kv_transpose_row_groups(char* const* to, int64_t to_at, const char* const* from, int64_t from_at,
                                                            int64_t bs, bool stream) {
  constexpr int64_t row_bytes = 16 * GROUPS;
#if KV_AVX2
  if (GROUPS == 4 && bs == 32 && kv_avx512.load(std::memory_order_relaxed)) {
    kv_transpose_rows32_avx512(to, to_at, from, from_at, stream);
    return;
  }
  // Two bands at once: each source row's 32 bytes in one load, the 8 x 8 unpacks of both bands in the
  // two 128-bit lanes (as kv_transpose_lines16). Measured on llamacpp-vtrans -> vllm-flash-nhd's V
  // alone: 6.3 -> 8.1 GiB/s at one thread, 12.6 -> 15.6 at two.
  if (bs % 16 == 0) {
    for (int64_t pair = 0; pair < bs / 16; ++pair) {  // target rows 16 * pair + b and + 8 + b
      __m256i c[GROUPS][8];
      KV_UNROLL for (int q = 0; q < GROUPS; ++q) {  // source rows 8 * q + a
        __m256i r[8];
        KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from[8 * q + a] + from_at + 32 * pair));
        kv_transpose8x16(r, c[q]);
      }
      KV_UNROLL for (int b = 0; b < 8; ++b) {
        KV_UNROLL for (int half = 0; half < 2; ++half) {  // the low lanes hold target row 16 * pair + b, the high ones + 8
          char* row = to[16 * pair + 8 * half + b] + to_at;
          const bool streamed = stream && reinterpret_cast<uintptr_t>(row) % row_bytes == 0;
          KV_UNROLL for (int q = 0; q < GROUPS; q += 2) {  // 32 bytes: source rows 8 * q .. 8 * q + 15
            const __m256i part = half == 0 ? _mm256_permute2x128_si256(c[q][b], c[q + 1][b], 0x20) : _mm256_permute2x128_si256(c[q][b], c[q + 1][b], 0x31);
            if (streamed) _mm256_stream_si256(reinterpret_cast<__m256i*>(row + 16 * q), part);
            else _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 16 * q), part);
          }
          if (streamed) kv_line_stored();
        }
      }
    }
    return;
  }
#endif
  for (int64_t band = 0; band < bs / 8; ++band) {  // target rows 8 * band + b, source bytes from_at + 16 * band
    __m128i c[GROUPS][8];
    KV_UNROLL for (int q = 0; q < GROUPS; ++q) {  // source rows 8 * q + a
      __m128i r[8];
      KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from[8 * q + a] + from_at + 16 * band));
      kv_transpose8x8(r, c[q]);
    }
    KV_UNROLL for (int b = 0; b < 8; ++b) {
      char* row = to[8 * band + b] + to_at;
      if (stream && reinterpret_cast<uintptr_t>(row) % row_bytes == 0) {
        KV_UNROLL for (int q = 0; q < GROUPS; ++q) _mm_stream_si128(reinterpret_cast<__m128i*>(row + 16 * q), c[q][b]);
        kv_line_stored();
      } else {
        KV_UNROLL for (int q = 0; q < GROUPS; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 16 * q), c[q][b]);
      }
    }
  }
}
#endif

// kv_transpose_rows over a block of up to 32 x 32 (rows `to[b]`, `from[a]`): a 16-bit block of 32 or 16
// source rows with every row present moves in bands of 8 target rows (kv_transpose_row_groups); the rest 8
// x 8 at a time. The block of 16 source rows is a 16-token block's, which took the 8 x 8 tiles (each
// target row's halves stored apart, by ordinary stores) before: measured on an Intel Xeon, 256 MiB, one
// process each, in half-line bands over 8 x 8 tiles, 1.28x / 1.64x as fast at one / two threads for
// sglang-mha -> vllm-paged-legacy (0.36x / 0.27x of memcpy -> 0.46x / 0.45x), 1.31x / 1.22x for llamacpp
// (0.39x / 0.39x -> 0.52x / 0.48x); the bare transpose of whole blocks into token-fastest read 0.71x /
// 0.76x there. What is left is the key cell's 16-byte packs from gathered rows (a loop copying them four
// rows to a line, the row pointers read once a block, measured 0.9x as fast as the emitted one).
// `present`: the caller knows every row of the block non-null (a gathered side with no slot absent; the
// strided side never is), so the block skips its own check of the 64 row pointers. Measured on
// llamacpp-vtrans -> lmcache-2ltd (256 MiB, two runs in one process, 1 / 2 threads): the check skipped
// 1.02-1.04x / 1.02-1.09x as fast over the pair.
// @pre present implies to[0 .. bs) and from[0 .. as) are all non-null.
template <int ELEMENT>
[[maybe_unused]] static inline void kv_transpose_rows_block(char* const* to, int64_t to_at, const char* const* from, int64_t from_at,
                                                            int64_t as, int64_t bs, bool stream, bool present = false) {
#if defined(__SSE2__)
  if (ELEMENT == 2 && (as == 32 || as == 16) && bs % 8 == 0) {
    bool whole = true;
    if (!present) {
      for (int64_t k = 0; k < as; ++k) whole = whole && from[k] != nullptr;
      for (int64_t k = 0; k < bs; ++k) whole = whole && to[k] != nullptr;
    }
    if (whole) {
      if (as == 32) kv_transpose_row_groups<4>(to, to_at, from, from_at, bs, stream);
      else kv_transpose_row_groups<2>(to, to_at, from, from_at, bs, stream);
      return;
    }
  }
#endif
  (void)stream;
  for (int64_t b0 = 0; b0 < bs; b0 += 8)
    for (int64_t a0 = 0; a0 < as; a0 += 8)
      kv_transpose_rows<ELEMENT>(to + b0, to_at + a0 * ELEMENT, from + a0, from_at + b0 * ELEMENT, as - a0 < 8 ? as - a0 : 8,
                                 bs - b0 < 8 ? bs - b0 : 8);
}

// to[b][a] = from[a][b] for a tile of up to 8 x 8 ELEMENT-byte elements (a < as, b < bs); rows `to_row` /
// `from_row` bytes apart. Whole 16-bit tiles are transposed in registers.
template <int ELEMENT>
[[maybe_unused]] static inline void kv_transpose_tile(char* to, int64_t to_row, const char* from, int64_t from_row, int64_t as,
                                                      int64_t bs, bool stream) {
#if defined(__SSE2__)
  if (ELEMENT == 2 && as == 8 && bs == 8) {
    __m128i c[8];
    kv_transpose8x8_registers(from, from_row, c);
    KV_UNROLL for (int b = 0; b < 8; ++b) {
      if (stream) _mm_stream_si128(reinterpret_cast<__m128i*>(to + b * to_row), c[b]);
      else _mm_storeu_si128(reinterpret_cast<__m128i*>(to + b * to_row), c[b]);
    }
    return;
  }
#endif
  (void)stream;
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t a = 0; a < as; ++a) std::memcpy(to + b * to_row + a * ELEMENT, from + a * from_row + b * ELEMENT, ELEMENT);
}

// A transpose's target rows, row b at to(b): `row` bytes apart from `at` (a block's rows, or a stage's), or
// placed one by one, rows[b] + at (gathered target rows: a slot pool's token rows). `from(k)` is the same
// rows from row k on.
struct kv_rows_apart {
  char* at;
  int64_t row;
  char* operator()(int64_t b) const { return at + b * row; }
  kv_rows_apart from(int64_t k) const { return {at + k * row, row}; }
};
struct kv_rows_placed {
  char* const* rows;
  int64_t at;
  char* operator()(int64_t b) const { return rows[b] + at; }
  kv_rows_placed from(int64_t k) const { return {rows + k, at}; }
};

// Four 8 x 8 tiles side by side (32 elements along a, 8 along b) of 16-bit elements, each target row
// written as one whole 64-byte line: streamed when the line is aligned, so write-combining completes it
// without reading it first (an 8 x 8 tile alone would leave 8 lines half-written). `to`: kv_rows_apart or
// kv_rows_placed.
template <class Rows>
[[maybe_unused]] static inline void kv_transpose_lines(const Rows& to, const char* from, int64_t from_row, bool stream) {
#if defined(__SSE2__)
  __m128i rows[4][8];
  KV_UNROLL for (int q = 0; q < 4; ++q) kv_transpose8x8_registers(from + q * 8 * from_row, from_row, rows[q]);
  KV_UNROLL for (int b = 0; b < 8; ++b) {
    char* line = to(b);
    if (stream && reinterpret_cast<uintptr_t>(line) % 64 == 0) {
      KV_UNROLL for (int q = 0; q < 4; ++q) _mm_stream_si128(reinterpret_cast<__m128i*>(line + q * 16), rows[q][b]);
      kv_line_stored();
    } else {
      KV_UNROLL for (int q = 0; q < 4; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(line + q * 16), rows[q][b]);
    }
  }
#else
  (void)stream;
  for (int b = 0; b < 8; ++b)
    for (int a = 0; a < 32; ++a) std::memcpy(to(b) + a * 2, from + a * from_row + b * 2, 2);
#endif
}

// 16-byte packs into lines: to(t) + 16 p = from + (16 p + t) * 16 for 4 packs p by 16 rows t (a kilobyte of
// a legacy key block's [pack][16 tokens][16 bytes]: one 64-byte line of each token's row), each target line
// streamed when aligned. The packs' way straight into token rows, as kv_transpose_lines16 is the values'.
template <class Rows>
[[maybe_unused]] static inline void kv_pack_lines16(const Rows& to, const char* from, bool stream) {
#if KV_AVX2
  KV_UNROLL for (int t = 0; t < 16; t += 2) {
    __m256i line[2][2];  // [token t or t + 1][packs 0, 1 or 2, 3]
    KV_UNROLL for (int pair = 0; pair < 2; ++pair) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + ((2 * pair) * 16 + t) * 16));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + ((2 * pair + 1) * 16 + t) * 16));
      line[0][pair] = _mm256_permute2x128_si256(a, b, 0x20);
      line[1][pair] = _mm256_permute2x128_si256(a, b, 0x31);
    }
    KV_UNROLL for (int u = 0; u < 2; ++u) {
      char* const at = to(t + u);
      if (stream && reinterpret_cast<uintptr_t>(at) % 64 == 0) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(at), line[u][0]);
        _mm256_stream_si256(reinterpret_cast<__m256i*>(at + 32), line[u][1]);
        kv_line_stored();
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), line[u][0]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + 32), line[u][1]);
      }
    }
  }
#elif defined(__SSE2__)
  KV_UNROLL for (int t = 0; t < 16; ++t) {
    char* const at = to(t);
    const bool streamed = stream && reinterpret_cast<uintptr_t>(at) % 64 == 0;
    KV_UNROLL for (int p = 0; p < 4; ++p) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + (16 * p + t) * 16));
      if (streamed) _mm_stream_si128(reinterpret_cast<__m128i*>(at + 16 * p), v);
      else _mm_storeu_si128(reinterpret_cast<__m128i*>(at + 16 * p), v);
    }
    if (streamed) kv_line_stored();
  }
#else
  (void)stream;
  for (int t = 0; t < 16; ++t)
    for (int p = 0; p < 4; ++p) std::memcpy(to(t) + 16 * p, from + (16 * p + t) * 16, 16);
#endif
}

// to[b][a] = from[a][b] for a < 16, b < 32 of 16-bit elements whose target rows are 32 bytes and abut (a
// block's 16 tokens of 32 dims into the legacy vLLM token-fastest value cache): the 1 KiB box is 16 whole
// lines, streamed when aligned, where 8 x 8 tiles' ordinary stores read each target line before writing it.
[[maybe_unused]] static inline void kv_transpose_columns16(char* to, const char* from, int64_t from_row, bool stream) {
  const bool streamed = stream && reinterpret_cast<uintptr_t>(to) % 64 == 0;
#if KV_AVX2
  KV_UNROLL for (int h = 0; h < 2; ++h) {  // source columns (target rows) 16 * h .. 16 * h + 15
    __m256i top[8], bottom[8];  // source rows 0..7 / 8..15: [b] holds column 16 * h + b (low lane) and + 8 (high lane)
    kv_transpose8x16_registers(from + 32 * h, from_row, top);
    kv_transpose8x16_registers(from + 8 * from_row + 32 * h, from_row, bottom);
    KV_UNROLL for (int b = 0; b < 8; ++b) {
      KV_UNROLL for (int half = 0; half < 2; ++half) {  // target row 16 * h + b, then + 8
        char* row = to + (16 * h + 8 * half + b) * 32;
        const __m256i v = half == 0 ? _mm256_permute2x128_si256(top[b], bottom[b], 0x20) : _mm256_permute2x128_si256(top[b], bottom[b], 0x31);
        if (streamed) _mm256_stream_si256(reinterpret_cast<__m256i*>(row), v);
        else _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), v);
      }
    }
  }
#elif defined(__SSE2__)
  KV_UNROLL for (int band = 0; band < 4; ++band) {  // target rows 8 * band .. 8 * band + 7
    __m128i left[8], right[8];  // source rows 0..7 / 8..15 of column 8 * band + b
    kv_transpose8x8_registers(from + 16 * band, from_row, left);
    kv_transpose8x8_registers(from + 8 * from_row + 16 * band, from_row, right);
    KV_UNROLL for (int b = 0; b < 8; ++b) {
      char* row = to + (8 * band + b) * 32;
      if (streamed) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(row), left[b]);
        _mm_stream_si128(reinterpret_cast<__m128i*>(row + 16), right[b]);
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row), left[b]);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 16), right[b]);
      }
    }
  }
#else
  (void)streamed;
  for (int b = 0; b < 32; ++b)
    for (int a = 0; a < 16; ++a) std::memcpy(to + b * 32 + a * 2, from + a * from_row + b * 2, 2);
#endif
}

// kv_transpose_lines for 16 rows along b (two of its 8-row bands): to(b)[a] = from[a][b], a < 32, b < 16.
// With AVX2 both bands come from one pass of 256-bit unpacks, half the baseline's instructions (no gain
// measured on the vllm-paged-legacy value move alone, which memory bounds; kept as the AVX2 variant's
// transpose, tested like the rest).
template <class Rows>
[[maybe_unused]] static inline void kv_transpose_lines16(const Rows& to, const char* from, int64_t from_row, bool stream) {
#if KV_AVX2
  if (from_row == 32 && kv_avx512.load(std::memory_order_relaxed)) {
    kv_transpose_lines16_avx512(to, from, stream);
    return;
  }
  __m256i rows[4][8];
  KV_UNROLL for (int q = 0; q < 4; ++q) kv_transpose8x16_registers(from + q * 8 * from_row, from_row, rows[q]);
  KV_UNROLL for (int b = 0; b < 8; ++b) {
    KV_UNROLL for (int half = 0; half < 2; ++half) {  // half 0: row b (low lanes); half 1: row b + 8 (high lanes)
      char* line = to(b + 8 * half);
      const __m256i first = half == 0 ? _mm256_permute2x128_si256(rows[0][b], rows[1][b], 0x20) : _mm256_permute2x128_si256(rows[0][b], rows[1][b], 0x31);
      const __m256i second = half == 0 ? _mm256_permute2x128_si256(rows[2][b], rows[3][b], 0x20) : _mm256_permute2x128_si256(rows[2][b], rows[3][b], 0x31);
      if (stream && reinterpret_cast<uintptr_t>(line) % 64 == 0) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(line), first);
        _mm256_stream_si256(reinterpret_cast<__m256i*>(line + 32), second);
        kv_line_stored();
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(line), first);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(line + 32), second);
      }
    }
  }
#else
  kv_transpose_lines(to, from, from_row, stream);
  kv_transpose_lines(to.from(8), from + 8 * 2, from_row, stream);
#endif
}

)";

// A whole block: the innermost loop is the bound-checked token's lowest digit and its strides continue the
// run in both layouts (a block of tokens whose rows abut on both sides: LMCache's token rows into a vLLM
// block, HF's per-head token rows into a TRT-LLM block). Such a block is copied at once where every token of
// it is moved (print_whole_block), and run by run only where the block is cut by num_tokens. Measured with
// bench/peers.py on lmcache-2ltd -> vllm-flash-nhd (256 MiB, one thread, three runs each): 2 KiB runs
// 19.6-22.0 ms, whole 32 KiB blocks 13.0-14.9 ms.
// The block then takes in the loops around it while each continues the run on both sides, unguarded, by a
// stride alone (no table, no other instance), up to 64 KiB: a page holding K and V of every head in one
// span on both sides (FlashInfer's HND page into FlashInfer 0.7.2's, the same layout under another block
// table) is one 64 KiB copy, where the token's guard kept it as 16 copies of a head's 4 KiB. Measured on
// flashinfer-hnd -> flashinfer072-hnd (256 MiB, three runs of `--ab-source` in one process, 1 / 2
// threads): 0.85-0.88x / 0.80-0.92x of memcpy as 4 KiB blocks four at a time, 0.92-0.95x / 0.89-1.00x as
// one copy.
struct WholeBlock {
  std::int64_t bytes = 0;  // 0: none
  std::size_t level = 0;   // the loop before which it is copied (print_whole_block)
};

WholeBlock whole_block(const Cell& cell, int source_bytes, int target_bytes, bool convert, std::size_t flat, int prefetch) {
  const std::size_t loops = cell.loops.size();
  // (A cell whose loops follow the source keeps this: what it needs is its innermost loop, checked below.)
  if (convert || cell.tile_target_contiguous >= 0 || loops <= flat) return {};
  if (prefetch == static_cast<int>(loops) - 1) return {};  // its displacement is only known inside the loop
  const int m = cell.loops.back();
  const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
  const CellCoordinate& coord = cell.coords[static_cast<std::size_t>(mode.coord)];
  if (!coord.guarded || coord.inverse >= 0 || mode.top_of_token || mode.weight != 1 || coord.modes.empty() || coord.modes.back() != m) return {};
  // Whether loop `at` continues a run of `run` elements on both sides, by its stride alone.
  auto continues = [&](int at, std::int64_t run) {
    if (selects_instance(cell, at)) return false;
    for (const SideForm* f : {&cell.source, &cell.target})
      if (f->stride[static_cast<std::size_t>(at)] != run || read_by_atoms(*f, at)) return false;
    return true;
  };
  if (!continues(m, cell.run_elements)) return {};
  constexpr std::int64_t kMostBytes = std::int64_t{64} << 10;
  WholeBlock out{mode.extent * cell.run_elements * source_bytes, loops - 1};
  if (!target_runs_aligned(cell, target_bytes) || out.bytes % 16 != 0 || out.bytes > kMostBytes) return {};
  // Outward over the loops around it, inside the flat ones, each after the prefetch's level (whose
  // displacement the copy reads).
  while (out.level > flat && static_cast<int>(out.level) - 1 > prefetch) {
    const int around = cell.loops[out.level - 1];
    const Mode& a = cell.modes[static_cast<std::size_t>(around)];
    if (cell.coords[static_cast<std::size_t>(a.coord)].guarded || a.top_of_token || out.bytes * a.extent > kMostBytes ||
        !continues(around, out.bytes / source_bytes))
      break;
    out.bytes *= a.extent;
    --out.level;
  }
  return out;
}

// Whether streamed whole blocks (whole_block) are copied four at a time: blocks of up to two pages (under
// two, kv_stream_copy reads a block as one stream). A whole block is then left pending (its target and
// source kept) and every fourth one copies the four at once (kv_stream_copy4); the cell copies the rest as
// it returns.
// Measured on hf-dynamic -> vllm-flash-hnd (4 KiB blocks, a head's 16 rows, read in the source's order: the
// next block is the next page; 256 MiB, one process, 1 / 2 threads): 0.81-0.87 -> 1.07x of memcpy /
// 1.30-1.37 -> 1.68-1.72x (by hand, four consecutive blocks at once: 1.09-1.11x / 1.67-1.72x).
// Blocks of two pages too, which kv_stream_copy reads as two page streams. Measured on an Ice Lake-class
// Xeon (2026-12-07, `kvlayout_bench_sweep --ab-source`, 256 MiB, one process of 5 interleaved repetitions
// each, 1 / 2 threads) over the 19 kernels with 8 KiB blocks: the 15 among vllm033-bhlnc, -blhnc, -lbhnc,
// -lhbnc and vllm-packed-hnd (a head's 16 slots of K and V), 11 of them 1.12-1.27x / 1.10-1.30x as fast
// (e.g. vllm033-lhbnc -> vllm033-lbhnc 0.68 / 0.67 -> 0.86 / 0.82x of memcpy, vllm033-bhlnc ->
// vllm033-lbhnc 0.66 / 0.73 -> 0.82 / 0.87), the other four, already at 0.78-0.91x, 1.01-1.06x /
// 0.93-0.99x; hf-dynamic <-> trtllm-pool (32 slots of a head's K or V), already at 0.78-0.86x,
// 0.95-1.04x / 0.94-1.02x (the run's noise). A call on an AMD CPU with AVX-512 copies the blocks under two
// pages one after another all the same (kv_blocks_at_once, measured there).
bool whole_blocks_at_once(std::int64_t whole_block) { return whole_block > 0 && whole_block <= 8192 && whole_block % 64 == 0; }

// Whole blocks of a paged source walked in the source's physical order: the loop that steps the blocks
// takes them in the order of their table entries (sorted once per call of the cell), and each block is
// copied as one forward stream (kv_stream_copy without page streams), so that the source is read as the
// pages of its pool lie and the hardware prefetcher follows from one block into the next, where the
// logical order reads the blocks scattered as the table lists them. Where the call's CPU picks it
// (kv_blocks_in_order). For blocks copied one at a time (over two pages: under, four at a time), where the
// loop around the block reads exactly one source table at its own value (a block table); a target table
// the loop reads too (a paged target) is then written in the source's order. Measured by hand on an AMD
// EPYC (Zen 4, `--ab-source`, 256 MiB, 1 / 2 threads): the blocks sorted alone, or copied as one stream
// alone, gained nothing (vllm-mla -> lmcache-mla, 18 KiB blocks: 0.99x / 1.01x, and 0.85x -> 0.88x / 0.93x
// -> 0.88x of memcpy); both, 0.79-0.86x -> 0.97-1.03x / 0.88-0.96x -> 0.97-1.06x, and vllm-flash-nhd ->
// lmcache-2ltd (32 KiB blocks) 0.84-0.89x -> 1.04-1.07x / 0.91-0.95x -> 0.99-1.04x. Generated, `kvlayout_bench_sweep --ab KVLAYOUT_BLOCK_ORDER=off` over the 13 distinct kernels
// that carry it (all into LMCache's objects; two processes of 5 interleaved repetitions): 1.17-1.19x /
// 1.04-1.05x as fast at median, faster in 9-11 / 9-10 of 13; vLLM's NHD and MLA caches and vLLM 0.3.3's
// MLA lbnhc pages 1.15-1.26x / 1.03-1.15x, the sources whose blocks hold K and V or every layer apart
// (FlashInfer's NHD pages, vLLM 0.3.3's blnhc) 0.98-1.01x / 0.98-1.06x (each block's half is read, not the
// pool in order). Over the 24 distinct kernels into paged targets (vLLM's, FlashInfer's, vLLM 0.3.3's
// pages under another table or layout): 1.17x / 1.03-1.07x at median, faster in 20-22 / 18-19 of 24,
// 0.90-1.31x / 0.91-1.30x (vllm-flash-nhd -> flashinfer-nhd 1.08-1.10x / 1.09-1.15x, flashinfer-hnd ->
// flashinfer072-hnd 1.16-1.26x / 1.09-1.30x).
struct BlockOrder {
  int level = -1;               // the loop (in cell.loops) stepping the blocks; -1 where none
  int table = 0;                // the source table it reads: the sort key
  std::int64_t next_block = 0;  // source elements from one physical block to the next (the entry's coefficient)
};

BlockOrder block_order(const Cell& cell, const WholeBlock& block) {
  if (block.bytes == 0 || whole_blocks_at_once(block.bytes) || block.level == 0) return {};
  const int level = static_cast<int>(block.level) - 1;
  const int m = cell.loops[static_cast<std::size_t>(level)];
  if (selects_instance(cell, m)) return {};
  const Atom* table = nullptr;
  for (const Atom& a : cell.source.atoms) {
    if (std::find(a.modes.begin(), a.modes.end(), m) == a.modes.end()) continue;
    if (table != nullptr || a.modes != std::vector<int>{m}) return {};
    table = &a;
  }
  if (table == nullptr || table->e->op != expr::Op::Lookup || table->e->args[0]->op != expr::Op::Coord || table->e->args[0]->value != m) return {};
  return {level, static_cast<int>(table->e->value), table->coef};
}

// As C: every value of `mode`'s range is moved, with the loops outside it bound (the bound-checked
// coordinate it is a digit of stays within its limit at the mode's last value).
std::string every_value_moved(const Cell& cell, int mode) {
  const Mode& m = cell.modes[static_cast<std::size_t>(mode)];
  return coordinate_base(cell, m.coord, mode) + " + " + i64((m.extent - 1) * m.weight) + " <= " + coordinate_limit(cell, m.coord, kInputs);
}

// Before the whole block's loop (see whole_block): the block in one copy (per group member) when its last
// token is moved. The offsets of the level around are the block's first run: the levels inside add only
// their own strides.
void print_whole_block(CodeWriter& w, const Cell& cell, int source_bytes, int target_bytes, const WholeBlock& block, bool prefetch,
                       const std::vector<RunAddress>& members, bool in_order) {
  const int m = cell.loops.back(), around = static_cast<int>(block.level) - 1;
  const std::int64_t bytes = block.bytes;
  const std::string size = std::to_string(bytes);
  w.line("// Every token of the block moved: one copy.");
  w.open("if (" + every_value_moved(cell, m) + ")");
  for (const RunAddress& at : members) {
    const std::string s = address(at, true, offset_at(cell, true, around), source_bytes);
    const std::string d = address(at, false, offset_at(cell, false, around), target_bytes);
    if (prefetch)
      w.line(step_prefetch(at, "kv_prefetch_run<" + std::to_string(run_prefetch_bytes(bytes)) + ">(" + prefetch_address(at, offset_at(cell, true, around), source_bytes) +
                                   " + " + next_displacement_name() + " * " + std::to_string(source_bytes) + ");"));
    if (whole_blocks_at_once(bytes)) {
      w.open("if (stream)");
      w.line("kv_block_to[kv_blocks] = " + d + ", kv_block_from[kv_blocks] = " + s + ";");
      w.line("if (++kv_blocks == 4) kv_stream_copy4<" + size + ">(kv_block_to, kv_block_from), kv_blocks = 0;");
      w.close();
    } else {
      w.line("if (stream) kv_stream_copy<" + size + ">(" + d + ", " + s + (in_order ? ", !kv_by_blocks" : "") + ");");
    }
    w.line("else kv_copy<" + size + ">(" + d + ", " + s + ");");
  }
  w.line("continue;");
  w.close();
}

// The condition (as C, each term after " && ") that every position of a box is moved: each bound-checked
// coordinate with digits in the box, at its largest value there, within its limit.
std::string box_moved_whole(const Cell& cell, const SourceBox& box) {
  auto in_box = [&](int m) { return std::find(box.source_order.begin(), box.source_order.end(), m) != box.source_order.end(); };
  std::string whole;
  for (std::size_t c = 0; c < cell.coords.size(); ++c) {
    const CellCoordinate& coord = cell.coords[c];
    if (!coord.guarded || std::none_of(coord.modes.begin(), coord.modes.end(), in_box)) continue;
    std::string value = coord.lo && coord.modes.size() == 1 ? i64(coord.lo) : "";
    std::int64_t largest_inside = 0;
    for (int m : coord.modes) {
      const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
      if (in_box(m)) largest_inside += (mode.extent - 1) * mode.weight;
      else value += (value.empty() ? "" : " + ") + mode.var + " * " + i64(mode.weight);
    }
    whole += " && " + (value.empty() ? i64(0) : value) + " + " + i64(largest_inside) + " <= " + coordinate_limit(cell, static_cast<int>(c), kInputs);
  }
  return whole;
}

// A box staged out of gathered source rows (staged_runs_from_rows), before its first loop: where streaming
// and every position of the box is moved, the rows placed through the source's lookups, read four at a time
// (the next four prefetched a line at a time), their runs written into a buffer on the stack in the
// target's layout, the buffer then streamed out whole.
void print_rows_box(CodeWriter& w, const Cell& cell, const SourceBox& box, int source_bytes, int target_bytes) {
  const int around = static_cast<int>(box.level) - 1;
  const Mode& row = cell.modes[static_cast<std::size_t>(box.row_mode)];
  const std::vector<int> in_row(box.source_order.begin() + 1, box.source_order.end());
  w.line("// The box's runs staged out of its gathered source rows, four rows at a time, then streamed out (source_box.hpp).");
  w.open("if (stream" + box_moved_whole(cell, box) + ")");
  w.line("const char* kv_rows[" + std::to_string(row.extent) + "];");
  w.open("for (int64_t " + row.var + " = 0; " + row.var + " < " + i64(row.extent) + "; ++" + row.var + ")");
  for (const auto& line : lookup_row_offset(cell, true, box.row_mode, offset_at(cell, true, around), kInputs, "row")) w.line(line);
  w.line("kv_rows[" + row.var + "] = " + pointer_name(true) + " + row * " + std::to_string(source_bytes) + ";");
  w.close();
  // The next box's rows (next_rows_level), where every position of it is moved too: each step's lines of
  // them prefetched beside the four rows' own (the rows' last four have no next four to prefetch).
  // Measured on an AMD EPYC of Zen 4 (256 MiB, 1 / 2 threads, the prefetch switched in one kernel, three
  // processes of 5 interleaved repetitions) over the 5 kernels with such boxes, the legacy key cache's
  // blocks out of slot pools (sglang-mha, sglang0523-mha, -mha-hnd, llamacpp, llamacpp-vtrans): with it
  // 1.03-1.17x / 0.97-1.19x as fast (medians 1.10-1.13x / 1.04-1.11x; sglang-mha -> vllm-paged-legacy
  // 0.77x / 0.88x of memcpy with it). Not measured on Intel.
  const int next_level = next_rows_level(cell, box.row_mode, static_cast<int>(box.level));
  if (next_level >= 0) {
    const Mode& step = cell.modes[static_cast<std::size_t>(cell.loops[static_cast<std::size_t>(next_level)])];
    w.line("const char* kv_next_rows[" + std::to_string(row.extent) + "] = {};  // the next " + step.var + "'s box's source rows");
    open_next_step(w, cell, next_level);
    const std::string whole = box_moved_whole(cell, box);  // " && ..." per bound-checked coordinate, or empty
    if (!whole.empty()) w.open("if (" + whole.substr(4) + ")");
    w.open("for (int64_t " + row.var + " = 0; " + row.var + " < " + i64(row.extent) + "; ++" + row.var + ")");
    for (const auto& line : lookup_row_offset(cell, true, box.row_mode, offset_at(cell, true, around), kInputs, "row")) w.line(line);
    w.line("kv_next_rows[" + row.var + "] = " + pointer_name(true) + " + row * " + std::to_string(source_bytes) + ";");
    w.close();
    if (!whole.empty()) w.close();
    w.close();
  }
  w.line("alignas(64) char kv_stage[" + std::to_string(box.bytes) + "];");
  w.open("for (int64_t kv_row0 = 0; kv_row0 < " + i64(row.extent) + "; kv_row0 += " + std::to_string(kPageStreams) + ")");
  std::string in_row_offset, target_offset = row.var + " * " + i64(cell.target.stride[static_cast<std::size_t>(box.row_mode)]);
  for (int m : in_row) {
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    w.open("for (int64_t " + mode.var + " = 0; " + mode.var + " < " + i64(mode.extent) + "; ++" + mode.var + ")");
    in_row_offset += (in_row_offset.empty() ? "" : " + ") + mode.var + " * " + i64(cell.source.stride[static_cast<std::size_t>(m)]);
    target_offset += " + " + mode.var + " * " + i64(cell.target.stride[static_cast<std::size_t>(m)]);
  }
  if (in_row_offset.empty()) in_row_offset = i64(0);
  w.line("const int64_t kv_at = (" + in_row_offset + ") * " + std::to_string(source_bytes) + ";  // bytes into each row");
  w.line("if (kv_row0 + " + std::to_string(kPageStreams) + " < " + i64(row.extent) + " && kv_at % 64 == 0) { KV_UNROLL for (int64_t k = 0; k < " +
         std::to_string(kPageStreams) + "; ++k) kv_prefetch<64>(kv_rows[kv_row0 + " + std::to_string(kPageStreams) + " + k] + kv_at); }");
  if (next_level >= 0)
    w.line("if (kv_at % 64 == 0) { KV_UNROLL for (int64_t k = 0; k < " + std::to_string(kPageStreams) +
           "; ++k) if (kv_next_rows[kv_row0 + k] != nullptr) kv_prefetch<64>(kv_next_rows[kv_row0 + k] + kv_at); }");
  w.open("KV_UNROLL for (int64_t k = 0; k < " + std::to_string(kPageStreams) + "; ++k)");
  w.line("const int64_t " + row.var + " = kv_row0 + k;");
  w.line("std::memcpy(kv_stage + (" + target_offset + ") * " + std::to_string(target_bytes) + ", kv_rows[" + row.var + "] + kv_at, " +
         std::to_string(cell.run_elements * source_bytes) + ");");
  w.close();
  for (std::size_t i = 0; i < in_row.size() + 1; ++i) w.close();
  const std::string d = address({}, false, offset_at(cell, false, around), target_bytes);
  print_stream_out(w, d, "kv_stage", std::to_string(box.bytes));
  w.line("continue;");
  w.close();
}

// What a straight box's steps prefetch (print_pack_lines): the next block's same kilobyte where a step
// prefetch of the nest encloses the box (`next_block`, the nest's one member: its next_displacement_name()
// is declared), else the same kilobyte in the tensor instance ahead where the loop picking it encloses the
// box (`instance`, box_instance_step; `bound` that loop's end, as printed), else nothing.
struct BoxPrefetch {
  const RunAddress* next_block = nullptr;
  PrefetchStep instance;
  std::string bound;
};

// A box's packs in whole lines (pack_lines), inside its `if (stream && the box is whole)`: where the call's
// CPU streams boxes straight (kv_staged_boxes), a kilobyte of the source at a time, the pages four at a
// time (page_interleaved_step), one line into each of its 16 rows, where the row box's lookups place them
// or its row loop's target stride apart; then on to the next box. Each step prefetches what `ahead` says
// where the CPU takes it (kv_straight_box_prefetches).
void print_pack_lines(CodeWriter& w, const Cell& cell, const SourceBox& box, const PackLines& lines, int source_bytes, int target_bytes,
                      const BoxPrefetch& ahead) {
  constexpr std::int64_t kStepBytes = 1024, kPacksPerStep = 4;
  const int around = static_cast<int>(box.level) - 1;
  const Mode& row = cell.modes[static_cast<std::size_t>(lines.row_mode)];
  w.open("if (!" + cpu_choice_load("staged_boxes") + ")");
  const std::string next_instance = "pS_box_next";
  if (ahead.instance.level >= 0)
    for (const auto& line : next_instance_pointer(cell, ahead.instance.level, kInputs, 0, ahead.instance.iterations, ahead.bound, next_instance)) w.line(line);
  if (box.row_mode >= 0) {
    w.line("char* kv_rows[" + std::to_string(row.extent) + "];");
    w.open("for (int64_t " + row.var + " = 0; " + row.var + " < " + i64(row.extent) + "; ++" + row.var + ")");
    for (const auto& line : side_statements(cell, static_cast<int>(box.level), kInputs, false)) w.line(line);
    w.line("kv_rows[" + row.var + "] = " + address({}, false, offset_at(cell, false, static_cast<int>(box.level)), target_bytes) + ";");
    w.close();
  }
  w.open("for (int64_t q = 0; q < " + i64(lines.steps) + "; ++q)");
  w.line("const int64_t kv_step = " + page_interleaved_step(lines.steps, kStepBytes) + ";");
  // The step's kilobyte at `from` (the box's start, as C), prefetched.
  auto step_ahead = [&](const std::string& from) {
    return straight_box_prefetch("kv_prefetch_run<" + std::to_string(kStepBytes) + ">(" + from + " + kv_step * " + i64(kStepBytes) + ");");
  };
  if (ahead.next_block != nullptr)
    w.line(step_prefetch(*ahead.next_block, step_ahead(prefetch_address(*ahead.next_block, "(" + offset_at(cell, true, around) + " + " + next_displacement_name() + ")",
                                                                         source_bytes))));
  else if (ahead.instance.level >= 0) {
    RunAddress in_next;  // the nest's one member, in the instance ahead
    in_next.source_pointer = next_instance;
    w.line(step_ahead(address(in_next, true, offset_at(cell, true, around), source_bytes)));
  }
  // The step's first pack, by the box's other loops (the source's order, the row loop left out): each
  // loop's value at it, times its target stride.
  std::string to;
  std::int64_t inner = 1;  // the packs per value of the loop at hand
  for (auto m = box.source_order.rbegin(); m != box.source_order.rend(); ++m) {
    if (*m == lines.row_mode) continue;
    const Mode& mode = cell.modes[static_cast<std::size_t>(*m)];
    to += (to.empty() ? "" : " + ") + std::string("(kv_step * ") + i64(kPacksPerStep) + " / " + i64(inner) + ") % " + i64(mode.extent) + " * " +
          i64(cell.target.stride[static_cast<std::size_t>(*m)]);
    inner *= mode.extent;
  }
  w.line("const int64_t kv_to = " + to + ";");
  const std::string rows = box.row_mode >= 0 ? "kv_rows_placed{kv_rows, kv_to * " + std::to_string(target_bytes) + "}"
                                             : "kv_rows_apart{" + address({}, false, "(" + offset_at(cell, false, around) + " + kv_to)", target_bytes) + ", " +
                                                   i64(cell.target.stride[static_cast<std::size_t>(lines.row_mode)] * target_bytes) + "}";
  w.line("kv_pack_lines16(" + rows + ", " + address({}, true, offset_at(cell, true, around), source_bytes) + " + kv_step * " + i64(kStepBytes) + ", true);");
  w.close();
  w.line("continue;");
  w.close();
}

// Before the box's first loop (see source_box.hpp): where streaming and every position of the box is
// moved, its runs in the source's order, the source's outermost loop split into four quarters taken one
// step each in turn. Staged (one member): copied into a buffer on the stack, then streamed out whole;
// otherwise each run streamed straight to the target, for every member of the nest. `ahead`: what its
// packs' straight steps prefetch (print_pack_lines).
void print_box_runs(CodeWriter& w, const Cell& cell, const SourceBox& box, const std::vector<RunAddress>& members, int source_bytes,
                    int target_bytes, bool staged, const BoxPrefetch& ahead) {
  const std::int64_t pieces = staged ? staged_runs_pieces(cell, box) : 0;
  const int around = static_cast<int>(box.level) - 1;
  const std::string whole = box_moved_whole(cell, box);
  auto offset_in_box = [&](const SideForm& f) {
    std::string sum;
    for (int m : box.source_order) sum += (sum.empty() ? "" : " + ") + cell.modes[static_cast<std::size_t>(m)].var + " * " + i64(f.stride[static_cast<std::size_t>(m)]);
    return sum;
  };
  const std::string run_bytes = std::to_string(cell.run_elements * source_bytes);
  if (!staged) w.line("// The box read in the source's order, four quarters at once (source_box.hpp).");
  else if (box.row_mode >= 0) w.line("// The box's runs staged in the source's order, four quarters at once, each target row then streamed out whole (source_box.hpp).");
  else if (pieces == 0) w.line("// The box's runs staged in the source's order, four quarters at once, then streamed out (source_box.hpp).");
  else w.line("// The box's runs staged in the source's order, four quarters at once, the box before streamed out beside (source_box.hpp).");
  w.open("if (stream" + whole + ")");
  // A box of kStraightBoxBytes or more whose packs make whole lines: straight where the CPU takes it.
  if (staged && box.bytes >= kStraightBoxBytes)
    if (const std::optional<PackLines> lines = pack_lines(cell, box, source_bytes)) print_pack_lines(w, cell, box, *lines, source_bytes, target_bytes, ahead);
  if (staged && pieces == 0) w.line("alignas(64) char kv_stage[" + std::to_string(box.bytes) + "];");
  if (pieces > 0) w.line("char* const kv_stage = kv_stages[kv_half];");
  const Mode& outer = cell.modes[static_cast<std::size_t>(box.source_order.front())];
  const std::int64_t quarter = outer.extent / kPageStreams;
  w.open("for (int64_t kv_quarter_at = 0; kv_quarter_at < " + i64(quarter) + "; ++kv_quarter_at)");
  for (std::size_t i = 1; i < box.source_order.size(); ++i) {
    const Mode& mode = cell.modes[static_cast<std::size_t>(box.source_order[i])];
    w.open("for (int64_t " + mode.var + " = 0; " + mode.var + " < " + i64(mode.extent) + "; ++" + mode.var + ")");
  }
  w.open("KV_UNROLL for (int64_t kv_quarter = 0; kv_quarter < " + std::to_string(kPageStreams) + "; ++kv_quarter)");
  w.line("const int64_t " + outer.var + " = kv_quarter * " + i64(quarter) + " + kv_quarter_at;");
  if (staged) {
    // In the stage, a row box's rows follow one another (its row mode's stride is a row).
    std::string stage_offset;
    for (int m : box.source_order) {
      const std::int64_t stride = m == box.row_mode ? box.row_bytes / target_bytes : cell.target.stride[static_cast<std::size_t>(m)];
      stage_offset += (stage_offset.empty() ? "" : " + ") + cell.modes[static_cast<std::size_t>(m)].var + " * " + i64(stride);
    }
    w.line("std::memcpy(kv_stage + (" + stage_offset + ") * " + std::to_string(target_bytes) + ", " +
           address({}, true, offset_at(cell, true, around), source_bytes) + " + (" + offset_in_box(cell.source) + ") * " + std::to_string(source_bytes) + ", " +
           run_bytes + ");");
  } else {
    for (const RunAddress& at : members)
      w.line("kv_stream_copy<" + run_bytes + ">(" + address(at, false, "(" + offset_at(cell, false, around) + " + " + offset_in_box(cell.target) + ")", target_bytes) +
             ", " + address(at, true, "(" + offset_at(cell, true, around) + " + " + offset_in_box(cell.source) + ")", source_bytes) + ");");
  }
  if (pieces == 0) {
    for (std::size_t i = 0; i < box.source_order.size() + 1; ++i) w.close();
  } else {
    // A piece of the pending box per iteration of the box's two outermost loops (staged_runs_pieces).
    const bool second = box.source_order.size() > 1;
    for (std::size_t i = 0; i < (second ? box.source_order.size() - 1 : 1); ++i) w.close();
    const std::string piece = i64(box.bytes / pieces);
    const std::string index =
        second ? "kv_quarter_at * " + i64(cell.modes[static_cast<std::size_t>(box.source_order[1])].extent) + " + " + cell.modes[static_cast<std::size_t>(box.source_order[1])].var
               : "kv_quarter_at";
    w.line("if (kv_pending != nullptr) kv_stream_copy<" + std::to_string(box.bytes / pieces) + ">(kv_pending + (" + index + ") * " + piece +
           ", kv_stages[kv_half ^ 1] + (" + index + ") * " + piece + ");");
    for (std::size_t i = 0; i < (second ? 2u : 1u); ++i) w.close();
  }
  if (staged && box.row_mode >= 0) {
    // Each target row where its lookup places it (side_statements: the row loop's own, printed apart).
    const Mode& row = cell.modes[static_cast<std::size_t>(box.row_mode)];
    const std::string row_bytes = std::to_string(box.row_bytes);
    const std::string d = address({}, false, offset_at(cell, false, static_cast<int>(box.level)), target_bytes);
    w.open("for (int64_t " + row.var + " = 0; " + row.var + " < " + i64(row.extent) + "; ++" + row.var + ")");
    for (const auto& line : side_statements(cell, static_cast<int>(box.level), kInputs, false)) w.line(line);
    print_stream_out(w, d, "kv_stage + " + row.var + " * " + row_bytes, row_bytes);
    w.close();
  } else if (staged) {
    const std::string d = address({}, false, offset_at(cell, false, around), target_bytes);
    if (pieces == 0) {
      print_stream_out(w, d, "kv_stage", std::to_string(box.bytes));
    } else {
      w.line("if (reinterpret_cast<uintptr_t>(" + d + ") % 16 == 0) kv_pending = " + d + ", kv_half ^= 1;");
      w.line("else std::memcpy(" + d + ", kv_stage, " + std::to_string(box.bytes) + "), kv_pending = nullptr;");
    }
  }
  w.line("continue;");
  w.close();
}

// The flattened range's length as C (1 for a cell without loops).
std::string flat_total(const Cell& cell) {
  if (cell.loops.empty()) return i64(1);
  std::string total;
  for (std::size_t l = 0; l < flattened_loops(cell); ++l) total += (l ? " * " : "") + ("(" + extent(cell, cell.loops[l], kInputs) + ")");
  return total;
}

// Whether run_part interleaves the nests' passes, one flattened iteration of the first nest at a time:
// where two nests read the same source pages (sibling_cells.hpp's within_a_page) but are not one nest (a
// legacy K x-pack cell and a V tile over a source that interleaves K and V per head), one pass after the
// other reads those pages twice from memory; interleaved, the second finds them in cache. Measured in one
// process (256 MiB, one thread, ratios over all the pair's bytes): vllm-packed-nhd -> vllm-paged-legacy
// 0.34-0.40 -> 0.54-0.58x of memcpy (two threads 0.69-0.78 -> 0.82-1.27), vllm033-lbnhc ->
// vllm-paged-legacy 0.40-0.43 -> 0.59-0.65 (0.73-0.78 -> 1.04-1.21), vllm033-lbnhc -> llamacpp-vtrans 0.33
// -> 0.35-0.38; 16 iterations per pass: 0.50-0.55. Nests that only write the same pages (streamed) gained
// nothing (llamacpp-vtrans -> vllm-packed-nhd, vllm-paged-legacy -> vllm033-lbnhc), so they stay apart.
// The passes share pages only where the nests walk the source in the same outer order: cpu_kernel aligns
// a runs cell's loops with the tile's first (emit/pass_alignment.hpp).
// The flattened iteration's source above which interleaved nests run in block passes (block_pass_count).
// Over the 15 kernels with interleaved passes (`--ab KVLAYOUT_BLOCK_PASSES=off` with every one split, Zen 4,
// two processes of 5 interleaved repetitions, 1 / 2 threads): the 7 whose flattened iteration reads 256 KiB
// to 1 MiB (vLLM 0.3.3's BHLNC and LHBNC caches into the legacy cache; those, BLHNC, LBHNC and vLLM's packed
// HND into llama.cpp's transposed V) 1.05-1.27x / 0.93-1.25x as fast in block passes, 1.11x / 1.09x at
// median; of those of 64 KiB (taken where block_pass_count's two conditions hold), the rows
// holding every head's K and V (vLLM's packed NHD, 0.3.3's BLNHC and LBNHC, LMCache's packed objects into
// the legacy cache) 1.09-1.18x / 1.06-1.19x, but a head's rows in one span (0.3.3's BLHNC, LBHNC, vLLM's
// packed HND) 0.95-1.02x / 0.86-0.98x and LMCache's t2d objects (K and V rows 2 KiB apart) 0.83x /
// 0.85-0.88x: the first split (their head loop steps 512 bytes through 4 KiB rows, K and V 256 bytes
// apart), the others not (a head's rows one 8 KiB span; t2d's K and V 2 KiB apart, its head step 256 bytes).
constexpr std::int64_t kBlockPassSourceBytes = std::int64_t{64} << 10;

// How many block passes run_part splits each interleaved pass into (print_cell's `block_passes`): one per
// iteration (at capacity) of the first nest's loop inside its flattened ones, or 0 (none). Taken where one
// flattened iteration reads more than kBlockPassSourceBytes: such a pass reads more than the caches keep
// between the nests (vLLM 0.3.3's LHBNC cache: a (layer, head)'s 128 blocks of 8 KiB, 1 MiB, the K packs'
// nest reading the first 256 bytes of each 512 and the V tiles' the rest); in block passes each nest reads
// its half of one block right after the other's. Measured on an AMD EPYC of Zen 4 (a hand edit of
// vllm033-lhbnc -> vllm-paged-legacy moving each block's K packs and V tiles in turn, 256 MiB, two processes
// of 7 interleaved repetitions, 1 / 2 threads): 0.68x -> 0.84-0.86x of memcpy, 1.25-1.28x / 1.07-1.25x as
// fast. Below it, only where that loop's iterations interleave in the source (its step is shorter than what
// an iteration reads: rows holding every head's K and V) and every other nest reads within one step of the
// first's (K and V of a head side by side), as kBlockPassSourceBytes says.
std::int64_t block_pass_count(const Plan& plan, const std::vector<std::vector<Sibling>>& groups, int source_bytes) {
  const Cell& first = plan.cells[static_cast<std::size_t>(groups.front().front().cell)];
  const std::size_t flat = flattened_loops(first);
  if (first.loops.size() <= flat) return 0;
  const int m = first.loops[flat];
  const std::int64_t count = first.modes[static_cast<std::size_t>(m)].extent;
  if (count <= 1) return 0;
  if (bytes_per_iteration(first, static_cast<int>(flat) - 1, source_bytes) > kBlockPassSourceBytes) return count;
  const std::int64_t step = std::abs(first.source.stride[static_cast<std::size_t>(m)]) * source_bytes;
  if (step == 0 || step >= bytes_per_iteration(first, static_cast<int>(flat), source_bytes)) return 0;
  for (const auto& group : groups) {
    const SideForm& other = plan.cells[static_cast<std::size_t>(group.front().cell)].source;
    if (other.tensor != first.source.tensor || std::abs(other.constant - first.source.constant) * source_bytes > step) return 0;
  }
  return count;
}

bool interleaved_passes(const Plan& plan, const std::vector<std::vector<Sibling>>& groups, int source_bytes) {
  for (std::size_t a = 0; a < groups.size(); ++a)
    for (std::size_t b = a + 1; b < groups.size(); ++b)
      if (within_a_page(plan.cells[static_cast<std::size_t>(groups[a].front().cell)].source,
                        plan.cells[static_cast<std::size_t>(groups[b].front().cell)].source, source_bytes))
        return true;
  return false;
}

// The loop nest of a sibling group's first cell (sibling_cells.hpp), copying every member's run at its
// innermost level; named after that cell.
// `block_passes` > 0: run_part interleaves the nests in block passes too (block_pass_count), and the nest takes
// the pass (`inner` of `inners`) as arguments: the loop inside the flattened ones runs its share of them, or,
// where that loop is not printed plain (a box, paired runs or whole blocks at its level, a block order, a slot
// stage, or no such loop), the nest moves everything in the pass `inner` 0.
void print_cell(CodeWriter& w, const Plan& plan, const prove::Proof& p, const std::vector<Sibling>& group, int source_bytes, int target_bytes, bool convert,
                const std::string& name_suffix = "", std::int64_t block_passes = 0) {
  const Cell& cell = plan.cells[static_cast<std::size_t>(group.front().cell)];
  std::vector<RunAddress> members;
  for (std::size_t k = 0; k < group.size(); ++k) members.push_back(member_address(group[k], k));
  // Statements of a level: the nest's, then the other members' instance pointers.
  auto statements = [&](int level, const std::string& skip) {
    for (const auto& line : level_statements(cell, level, kInputs, skip)) w.line(line);
    for (std::size_t k = 1; k < group.size(); ++k) {
      if (group[k].source_instance_shift != 0)
        for (const auto& line : shifted_pointer(cell, level, kInputs, true, group[k].source_instance_shift, members[k].source_pointer)) w.line(line);
      if (group[k].target_instance_shift != 0)
        for (const auto& line : shifted_pointer(cell, level, kInputs, false, group[k].target_instance_shift, members[k].target_pointer)) w.line(line);
    }
  };
  const std::size_t loops = cell.loops.size();
  // A staged tile's box (print_copy), for a nest of one member with loops.
  const std::int64_t tile_stage_bytes = members.size() == 1 && loops > 0 ? staged_box_bytes(cell, source_bytes, target_bytes, convert) : 0;
  auto copies = [&](bool prefetch) {
    for (const RunAddress& at : members) {
      if (convert && members.size() > 1) w.open("");  // a converting copy declares its own from / to
      print_copy(w, cell, source_bytes, target_bytes, convert, prefetch, at, tile_stage_bytes > 0, &plan);
      if (convert && members.size() > 1) w.close();
    }
  };
  w.open("static void cell" + std::to_string(group.front().cell) + name_suffix +
         "(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, int64_t n, "
         "int64_t part, int64_t parts, int64_t sub, int64_t subs, " + std::string(block_passes > 0 ? "int64_t inner, int64_t inners, " : "") + "bool stream)");
  w.line("(void)st; (void)dt; (void)n; (void)stream;");
  if (block_passes > 0) w.line("(void)inner; (void)inners;");
  // Where the nest does not split its loop inside the flattened ones in block passes, it moves all in the first.
  bool whole_in_first_pass = false;
  auto move_whole_in_first_pass = [&]() {
    if (block_passes == 0 || whole_in_first_pass) return;
    w.line("if (inner != 0) continue;  // moved whole in the first block pass");
    whole_in_first_pass = true;
  };
  if (group.size() > 1) {
    std::string also;
    for (std::size_t k = 1; k < group.size(); ++k) also += (k > 1 ? ", " : "") + std::to_string(group[k].cell);
    w.line("// With cell" + std::string(group.size() > 2 ? "s " : " ") + also + ": the same nest, at other offsets.");
  }
  if (cell.tile_target_rows_gathered || cell.tile_source_rows_gathered)
    w.line("std::vector<char*> kv_to_rows;  std::vector<const char*> kv_from_rows;  // a gathered tile's rows, reused per iteration");
  if (gathered_chunk_bytes(cell, source_bytes) > 0) w.line("std::unique_ptr<char[]> kv_gather;  // a whole chunk's source rows, allocated at the first");
  statements(-1, "return;");
  if (loops == 0) {
    w.line("(void)parts; (void)subs;  // one copy, made by the first part's first pass");
    w.line(std::string("if (part != 0 || sub != 0") + (block_passes > 0 ? " || inner != 0" : "") + ") return;");
    copies(false);
    w.close();
    return;
  }
  // The two outermost loops are flattened and split evenly across the threads; a thread's part is split
  // again into `subs` passes where run_part interleaves nests (interleaved_passes).
  const std::size_t flat = flattened_loops(cell);
  // Paired 16-byte runs (run_pairs.hpp), and a box of them staged (source_box.hpp), for a nest of one member.
  const int pairs = convert ? -1 : run_pairs_level(cell, source_bytes, flat);
  const std::optional<SourceBox> staged_box = [&]() -> std::optional<SourceBox> {
    if (members.size() != 1 || convert) return std::nullopt;
    if (auto box = pairs >= 0 ? staged_runs(cell, source_bytes, flat) : std::nullopt) return box;
    if (auto box = staged_runs_into_rows(cell, source_bytes, flat)) return box;
    return staged_runs_from_rows(cell, source_bytes, flat);
  }();
  // A staged tile's, or a staged box's, two stage buffers live across the cell's iterations (print_copy and
  // print_box_runs stream a box out while the next is staged).
  const std::int64_t stage_bytes = tile_stage_bytes > 0 ? tile_stage_bytes : staged_box && staged_runs_pieces(cell, *staged_box) > 0 ? staged_box->bytes : 0;
  // A scatter into single-element slots, staged through slot rows where every token is moved (slot_stage.hpp).
  const std::optional<SlotStage> slots = slot_stage(cell, plan, *p.source_bound, *p.target_bound, source_bytes, target_bytes, convert, flat, members.size());
  if (slots) print_slot_stage_buffers(w, *slots);
  for (std::size_t l = 0; l < flat; ++l)
    w.line("const int64_t E" + std::to_string(l) + " = " + extent(cell, cell.loops[l], kInputs) + ";");
  w.line("const int64_t total = " + std::string(flat == 2 ? "E0 * E1" : "E0") + ";");
  w.line("const int64_t part_begin = total * part / parts, part_end = total * (part + 1) / parts;");
  w.line("const int64_t begin = part_begin + (part_end - part_begin) * sub / subs, end = part_begin + (part_end - part_begin) * (sub + 1) / subs;");
  const PrefetchStep step = prefetch_step(cell, source_bytes, whole_block(cell, source_bytes, target_bytes, convert, flat, -1).bytes);
  const WholeBlock block = whole_block(cell, source_bytes, target_bytes, convert, flat, step.level);
  const std::int64_t whole_block = block.bytes;
  // Whole blocks copied four at once read their pages four at a time, which the hardware follows: no
  // prefetch (measured slower with it: hf-dynamic -> vllm-flash-hnd, 4 KiB blocks, the block two ahead
  // prefetched: 0.77-0.78x of memcpy against 0.95-1.06x without, one thread). Nor where a call copies
  // them one at a time (kv_blocks_at_once): measured on an AMD EPYC of Zen 4, 256 MiB, 1 / 2 threads, over
  // the 35 kernels with such blocks of one page, the next block's page prefetched beside each block read
  // 0.82-0.90x / 0.93-0.97x as fast at median in two processes (hf-dynamic -> flashinfer-hnd 0.63-0.69x /
  // 0.76-0.81x), and 0.83x / 0.95x in a third with the two ways in each other's places, though the one pair
  // flashinfer-hnd -> hf-dynamic timed alone read 1.03-1.19x / 1.02-1.19x as fast with it. A staged tile prefetches the
  // next block's step beside each step (print_copy).
  const int prefetch = whole_blocks_at_once(whole_block) ? -1 : step.level;
  if (prefetch >= 0)
    for (RunAddress& at : members)
      at.prefetch_next_instance = step.next_instance, at.prefetch_choice = prefetch_choice(step);
  if (stage_bytes > 0) {
    w.line("alignas(64) char kv_stages[2][" + std::to_string(stage_bytes) + "];");
    w.line("char* kv_pending = nullptr;  // where the box staged in kv_stages[kv_half ^ 1] goes, not yet streamed out");
    w.line("int kv_half = 0;");
  }
  const BlockOrder order = block_order(cell, block);
  // The order's index of block `v` (the loop's own value where the call keeps the logical order).
  auto in_order = [&](const std::string& index) { return "(kv_by_blocks ? static_cast<int64_t>(kv_order[static_cast<size_t>(" + index + ")]) : " + index + ")"; };
  if (order.level >= 0) {
    w.line("// The blocks in the order of their table entries where the call's CPU picks it (kv_blocks_in_order).");
    // Not in interleaved passes (subs > 1), each of which would sort the table again.
    w.line("const bool kv_by_blocks = subs == 1 && " + cpu_choice_load("blocks_in_order") + ";");
    w.line("std::vector<int32_t> kv_order;");
    w.open("if (kv_by_blocks)");
    w.line("kv_order.resize(static_cast<size_t>(" + extent(cell, cell.loops[static_cast<std::size_t>(order.level)], kInputs) + "));");
    w.line("for (size_t kv_b = 0; kv_b < kv_order.size(); ++kv_b) kv_order[kv_b] = static_cast<int32_t>(kv_b);");
    const std::string entries = kInputs.src_tables + "[" + std::to_string(order.table) + "]";
    w.line("std::stable_sort(kv_order.begin(), kv_order.end(), [&](int32_t a, int32_t b) { return " + entries + "[a] < " + entries + "[b]; });");
    w.close();
  }
  if (whole_blocks_at_once(whole_block)) {
    w.line("char* kv_block_to[4];  // whole blocks not yet copied, four at a time (whole_blocks_at_once)");
    w.line("const char* kv_block_from[4];");
    w.line("int kv_blocks = 0;");
  }
  w.open("for (int64_t flat = begin; flat < end; ++flat)");
  const std::string& v0 = cell.modes[static_cast<std::size_t>(cell.loops[0])].var;
  // A flattened loop's value, through the block order where it steps the blocks.
  auto through_order = [&](int level, const std::string& value) { return order.level == level ? in_order(value) : value; };
  if (flat == 2) {
    const std::string& v1 = cell.modes[static_cast<std::size_t>(cell.loops[1])].var;
    w.line("const int64_t " + v0 + " = " + through_order(0, "flat / E1") + ", " + v1 + " = " + through_order(1, "flat % E1") + ";");
  } else {
    w.line("const int64_t " + v0 + " = " + through_order(0, "flat") + ";");
  }
  // `nested`: level l's loop is printed inside level l - 1's, in cell.loops' order; where that loop is a
  // nest loop of its own (not flattened), its next iteration is the next one run, and its end is named.
  // Only tiles and runs shorter than a line carry the prefetch into it by its stride (next_displacement's
  // carry_by_stride): runs of lines read on into the next block are followed by the hardware, and there
  // the carried prefetch only cost
  // (measured on an Ice Lake-class Xeon, one process each, 5 interleaved repetitions, 1 / 2 threads: HND
  // sources into SGLang's page_head host pool, 256-byte runs, 0.89-0.94x / 0.78-0.91x as fast
  // (flashinfer-hnd 0.93x / 0.78x, vllm-flash-hnd 0.93x / 0.91x); 34 other pairs at random 0.93-1.03x /
  // 0.93-1.18x, median 1.00x / 1.00x).
  // A loop read by the step's own lookup carries it for runs of lines too (statements.hpp), where a block
  // reads at most kNearestPrefetchBytes: over the 26 distinct kernels the carry reached on the Zen 4
  // (`--ab KVLAYOUT_CARRIED_PREFETCH=off`, 256 MiB, two processes of 5 interleaved repetitions, 1 / 2
  // threads), the 8 KiB blocks of vLLM 0.3.3's LHBNC cache gained in all 6 (1.02-1.21x / 1.00-1.30x), the
  // 32 KiB blocks of per-layer caches did not (FlashInfer's NHD pages into SGLang's layer_first pool
  // 0.93-0.97x / 0.88-1.00x, its HND pages 0.89-1.06x / 0.86-1.02x; the rest 0.95-1.08x).
  const bool carries_by_stride = cell.tile_target_contiguous >= 0 || cell.run_elements * source_bytes < 64;
  const bool carries_by_lookup = prefetch >= 0 && bytes_per_iteration(cell, prefetch, source_bytes) <= kNearestPrefetchBytes;
  auto displacement = [&](std::size_t l, const std::string& bound, bool nested = false) {
    if (static_cast<int>(l) != prefetch) return;
    const Carry carry{nested && l > flat ? cell.modes[static_cast<std::size_t>(cell.loops[l - 1])].var + "_end" : std::string(), carries_by_stride,
                      carries_by_lookup, "lookup_carried_prefetches"};
    const std::string next = next_displacement(cell, step, kInputs, bound, carry);
    // Blocks in the source's order: the next is the next physical block.
    w.line("const int64_t " + next_displacement_name() + " = " + (order.level == static_cast<int>(l) ? "kv_by_blocks ? " + i64(order.next_block) + " : (" + next + ")" : next) + ";");
    if (!step.next_instance) return;
    std::vector<std::string> named;  // members without their own instance share pS
    for (std::size_t k = 0; k < group.size(); ++k) {
      const std::string name = prefetch_pointer(members[k]);
      if (std::find(named.begin(), named.end(), name) != named.end()) continue;
      named.push_back(name);
      for (const auto& line : next_instance_pointer(cell, prefetch, kInputs, group[k].source_instance_shift, step.iterations, bound, name)) w.line(line);
    }
  };
  for (std::size_t l = 0; l < flat; ++l) {
    statements(static_cast<int>(l), "continue;");
    displacement(l, "E" + std::to_string(l));
  }
  if (slots || loops <= flat) move_whole_in_first_pass();
  if (slots) print_slot_stage(w, cell, *slots, [&](int level) { statements(level, "continue;"); });
  // Runs shorter than four lines leave the loop's own instructions, not memory, as the bound at one thread:
  // the innermost loop, when it is short and of fixed extent, is unrolled (measured on vllm-paged-legacy's
  // 16-byte key runs, innermost extent 16: 0.67x -> 0.87x..1.05x of memcpy for the key move alone).
  const Mode& innermost = cell.modes[static_cast<std::size_t>(cell.loops.back())];
  const bool unroll = loops > flat && cell.tile_target_contiguous < 0 && !innermost.top_of_token && innermost.extent <= 16 &&
                      cell.run_elements * source_bytes < 256;
  // Paired 16-byte runs (`pairs`): where streaming and every position of both loops' ranges is moved, a
  // nest stepping both by 2 or 4 (run_group_side) before the plain one, which takes the rest; where two by
  // two has a four-by-four alternative (quads_where_cpu_picks), both nests, the call's CPU choosing.
  auto print_pairs = [&] {
    const int outer = cell.loops[static_cast<std::size_t>(pairs)], inner = cell.loops.back();
    std::string whole;
    for (int m : {outer, inner})
      if (cell.coords[static_cast<std::size_t>(cell.modes[static_cast<std::size_t>(m)].coord)].guarded) whole += " && " + every_value_moved(cell, m);
    const int side = run_group_side(cell, pairs);
    const bool quads_alternative = quads_where_cpu_picks(cell, pairs);
    const std::string by = std::to_string(side);
    w.line("// 16-byte runs in " + by + " x " + by + " transposes" + (quads_alternative ? " (4 x 4 where the call's CPU takes them: kv_run_quads)" : "") +
           ": " + cell.modes[static_cast<std::size_t>(outer)].var + " continues them in the source, " + cell.modes[static_cast<std::size_t>(inner)].var +
           " in the target.");
    w.open("if (stream" + whole + ")");
    // The nest stepping both loops by `group`.
    auto nest = [&](int group) {
      // The target's loop outside the source's (run_pairs.hpp).
      const bool source_order = pairs_in_source_order(cell, pairs, group);
      const std::string step = std::to_string(group);
      std::vector<std::size_t> levels;
      for (std::size_t l = static_cast<std::size_t>(pairs); l < loops; ++l) levels.push_back(l);
      if (source_order) std::swap(levels[levels.size() - 2], levels.back());
      for (std::size_t k = 0; k < levels.size(); ++k) {
        const std::size_t l = levels[k];
        const int m = cell.loops[l];
        const std::string& v = cell.modes[static_cast<std::size_t>(m)].var;
        const bool paired = m == outer || m == inner;
        w.open(std::string(k + 1 == levels.size() ? "KV_UNROLL " : "") + "for (int64_t " + v + " = 0, " + v + "_end = " + extent(cell, m, kInputs) + "; " +
               v + " < " + v + "_end; " + (paired ? v + " += " + step : "++" + v) + ")");
        // A level's statements need every level above it: in source order, the two paired levels' come once
        // both loops are open.
        if (!source_order || k + 2 < levels.size()) {
          statements(static_cast<int>(l), "continue;");
          displacement(l, v + "_end", true);
        } else if (k + 1 == levels.size()) {
          for (std::size_t at = loops - 2; at < loops; ++at) {
            statements(static_cast<int>(at), "continue;");
            displacement(at, cell.modes[static_cast<std::size_t>(cell.loops[at])].var + "_end");
          }
        }
      }
      const std::int64_t from_pair = cell.source.stride[static_cast<std::size_t>(inner)] * source_bytes;
      const std::int64_t to_pair = cell.target.stride[static_cast<std::size_t>(outer)] * target_bytes;
      for (const RunAddress& at : members) {
        const std::string s = address(at, true, final_offset(cell, true), source_bytes);
        const std::string d = address(at, false, final_offset(cell, false), target_bytes);
        const std::string ps = prefetch_address(at, final_offset(cell, true), source_bytes);
        if (prefetch >= 0)  // once per source line, as print_copy's short runs
          for (int i = 0; i < group; ++i) {
            const std::string from = i == 0 ? ps : ps + " + " + i64(i * from_pair);
            if (group == 4)  // a whole line each
              w.line(step_prefetch(at, "kv_prefetch<64>(" + from + " + " + next_displacement_name() + " * " + std::to_string(source_bytes) + ");"));
            else
              w.line(step_prefetch(at, "if ((reinterpret_cast<uintptr_t>(" + from + ") & 63) < 32) kv_prefetch<32>(" + from + " + " + next_displacement_name() +
                                           " * " + std::to_string(source_bytes) + ");"));
          }
        w.line(std::string(group == 4 ? "kv_run_quads16(" : "kv_run_pairs16(") + d + ", " + i64(to_pair) + ", " + s + ", " + i64(from_pair) + ", true);");
      }
      for (std::size_t l = static_cast<std::size_t>(pairs); l < loops; ++l) w.close();
    };
    if (quads_alternative) {
      w.open("if (" + cpu_choice_load("run_quads") + ")");
      nest(4);
      w.close();
      w.open("else");
      nest(side);
      w.close();
    } else {
      nest(side);
    }
    w.line("continue;");
    w.close();
  };
  // A box read as four page streams (source_box.hpp): paired runs staged (staged_box), for a nest of one
  // member; or runs of lines streamed straight to the target.
  std::optional<SourceBox> box = staged_box;
  const bool staged = box.has_value();
  if (!box && !convert && whole_block == 0 && target_runs_aligned(cell, target_bytes) && (cell.run_elements * source_bytes) % 16 == 0)
    box = quartered_runs(cell, source_bytes, target_bytes, flat);
  // Packs in whole lines, for a nest of one member with no box of its own (pack_lines_box: the legacy key
  // block into head-major blocks, each head's 16 rows apart): straight where the call's CPU streams boxes
  // straight, the nest as printed otherwise.
  std::optional<SourceBox> lines_box;
  if (!box && members.size() == 1 && !convert) lines_box = pack_lines_box(cell, source_bytes, flat);
  if (lines_box && lines_box->bytes < kStraightBoxBytes) lines_box.reset();
  // What box `b`'s straight steps prefetch: the nest's next block where the step's loop encloses b (its
  // next displacement declared before b's first loop), else the instance ahead where its loop does.
  auto box_prefetch = [&](const SourceBox& b) {
    BoxPrefetch ahead;
    const int level = static_cast<int>(b.level);
    if (prefetch >= 0 && prefetch < level) {
      ahead.next_block = &members.front();
      return ahead;
    }
    ahead.instance = box_instance_step(cell, source_bytes, level);
    const std::size_t at = static_cast<std::size_t>(ahead.instance.level);
    if (ahead.instance.level >= 0) ahead.bound = at < flat ? "E" + std::to_string(at) : cell.modes[static_cast<std::size_t>(cell.loops[at])].var + "_end";
    return ahead;
  };
  // Whether the loop inside the flattened ones is printed plain, so that a block pass can take its share.
  const bool splits_in_block_passes = (!lines_box || lines_box->level != flat) && (!box || box->level != flat) && pairs != static_cast<int>(flat) &&
                                      (whole_block == 0 || block.level != flat) && order.level != static_cast<int>(flat);
  for (std::size_t l = flat; l < loops; ++l) {
    const std::string& v = cell.modes[static_cast<std::size_t>(cell.loops[l])].var;
    if (l == flat && !splits_in_block_passes) move_whole_in_first_pass();
    if (lines_box && l == lines_box->level) {
      w.open("if (stream" + box_moved_whole(cell, *lines_box) + ")");
      print_pack_lines(w, cell, *lines_box, *pack_lines(cell, *lines_box, source_bytes), source_bytes, target_bytes, box_prefetch(*lines_box));
      w.close();
    }
    if (box && l == box->level && box->rows_in_source) print_rows_box(w, cell, *box, source_bytes, target_bytes);
    else if (box && l == box->level) print_box_runs(w, cell, *box, members, source_bytes, target_bytes, staged, box_prefetch(*box));
    if (pairs >= 0 && l == static_cast<std::size_t>(pairs)) print_pairs();
    if (whole_block > 0 && l == block.level) print_whole_block(w, cell, source_bytes, target_bytes, block, prefetch >= 0, members, order.level >= 0);
    if (unroll && l + 1 == loops)
      w.raw("#if defined(__clang__)\n#pragma unroll " + std::to_string(innermost.extent) + "\n#else\n#pragma GCC unroll " +
            std::to_string(innermost.extent) + "\n#endif\n");
    if (order.level == static_cast<int>(l)) {
      // The blocks through the block order: the loop counts kv_at, its variable is the block taken.
      w.open("for (int64_t kv_at = 0, " + v + "_end = " + extent(cell, cell.loops[l], kInputs) + "; kv_at < " + v + "_end; ++kv_at)");
      w.line("const int64_t " + v + " = " + in_order("kv_at") + ";");
    } else if (l == flat && block_passes > 0 && !whole_in_first_pass) {
      // This block pass's share; the prefetch's bound stays the loop's end.
      w.open("for (int64_t " + v + "_end = " + extent(cell, cell.loops[l], kInputs) + ", " + v + " = " + v + "_end * inner / inners, " + v +
             "_stop = " + v + "_end * (inner + 1) / inners; " + v + " < " + v + "_stop; ++" + v + ")");
    } else {
      w.open("for (int64_t " + v + " = 0, " + v + "_end = " + extent(cell, cell.loops[l], kInputs) + "; " + v + " < " + v +
             "_end; ++" + v + ")");
    }
    statements(static_cast<int>(l), "continue;");
    displacement(l, v + "_end", true);
  }
  copies(prefetch >= 0);
  for (std::size_t l = flat; l < loops; ++l) w.close();
  w.close();
  if (stage_bytes > 0) w.line("if (kv_pending != nullptr) kv_stream_copy<" + std::to_string(stage_bytes) + ">(kv_pending, kv_stages[kv_half ^ 1]);");
  if (whole_blocks_at_once(whole_block))
    w.line("for (int b = 0; b < kv_blocks; ++b) kv_stream_copy<" + std::to_string(whole_block) + ">(kv_block_to[b], kv_block_from[b]);");
  w.close();
}

std::string prologue(const prove::Proof& p, const EmitOptions& o) {
  bool convert = p.source_layout->dtype != p.target_layout->dtype;
  std::string s = "#include <algorithm>\n#include <atomic>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <math.h>\n#include <thread>\n"
                  "#include <cstdlib>\n#include <memory>\n#include <utility>\n#include <vector>\n#if defined(__SSE2__)\n#include <emmintrin.h>\n#endif\n"
                  "// x86-64 with GCC or Clang: an AVX2 variant beside the baseline, chosen per call (kv_use_avx2).\n"
                  "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n#define KV_X86_DISPATCH 1\n#include <immintrin.h>\n"
                  "#else\n#define KV_X86_DISPATCH 0\n#endif\n"
                  "// The transposes' fixed loops over register arrays are unrolled whole, so the arrays stay in registers:\n"
                  "// at -O2 GCC kept them on the stack. vllm-paged-legacy -> vllm-flash-nhd's V alone, 1 thread: 0.51-0.55x\n"
                  "// -> 0.71-0.74x of memcpy; with its blocks in cache 5.8-6.0 -> 10-13 GiB/s.\n"
                  "#if defined(__clang__)\n#define KV_UNROLL _Pragma(\"unroll\")\n#elif defined(__GNUC__)\n#define KV_UNROLL _Pragma(\"GCC unroll 32\")\n"
                  "#else\n#define KV_UNROLL\n#endif\n\n";
  s += "namespace kvlayout_generated_" + o.name + " {\n\n" + expr::c_helpers("");
  s += "// Whether two different entries of (block, entry) pairs hold one block.\n"
       "[[maybe_unused]] static inline bool kv_repeats_a_block(std::vector<std::pair<int32_t, int64_t>>& used) {\n"
       "  std::sort(used.begin(), used.end());\n"
       "  for (size_t i = 1; i < used.size(); ++i)\n"
       "    if (used[i].first == used[i - 1].first && used[i].second != used[i - 1].second) return true;\n"
       "  return false;\n"
       "}\n\n";
  if (convert) s += conversion_source(p.source_layout->dtype, p.target_layout->dtype, "");
  return s + "\n";
}

void print_entry(CodeWriter& w, const prove::Proof& p, const Plan& plan, const EmitOptions& o, const std::string& run_part) {
  w.open("extern \"C\" int " + o.name +
         "(void* const* src, void* const* dst, const int32_t* const* src_tables, const int32_t* const* dst_tables, "
         "int64_t num_tokens, int num_threads)");
  w.line("using namespace kvlayout_generated_" + o.name + ";");
  // A side without tables whose cells read an inverse gets its own table list, and never reads the caller's.
  w.line("(void)src_tables; (void)dst_tables;");
  for (const auto& line : pointer_checks(p, plan)) w.line(line);
  auto reads = table_checks(p, plan, "return 2;");
  if (!reads.empty()) {
    // Every entry the move will read, for every token it moves, before anything is written.
    w.open("for (int64_t token = 0; token < num_tokens; ++token)");
    for (const auto& line : reads) w.line(line);
    w.close();
  }
  for (const DistinctCheck& c : distinct_checks(p, plan)) {
    // (block, entry) of each entry read, consecutive repeats dropped (the tokens of one block read one entry).
    w.open("");
    w.line("std::vector<std::pair<int32_t, int64_t>> used;  // " + c.table + ": distinct entries must hold distinct blocks");
    w.open("for (int64_t token = 0; token < num_tokens; ++token)");
    for (const auto& e : c.entries)
      w.line("{ const int64_t e = " + e + "; if (used.empty() || used.back().second != e) used.emplace_back(" + c.table + "[e], e); }");
    w.close();
    w.line("if (kv_repeats_a_block(used)) return " + std::to_string(kRepeatedBlock) + ";");
    w.close();
  }
  // Inverted tables (emit::InverseTable): inverse[slot] = the token whose entry holds the slot, -1 where
  // no moved token does; the cells read them after each side's own tables.
  std::string run_src_tables = "src_tables", run_dst_tables = "dst_tables";
  if (!plan.inverses.empty()) {
    std::vector<std::string> source_list, target_list;
    for (std::size_t i = 0; i < p.source_bound->tables.size(); ++i) source_list.push_back("src_tables[" + std::to_string(i) + "]");
    for (std::size_t i = 0; i < p.target_bound->tables.size(); ++i) target_list.push_back("dst_tables[" + std::to_string(i) + "]");
    for (std::size_t i = 0; i < plan.inverses.size(); ++i) {
      const InverseTable& inv = plan.inverses[i];
      const std::string name = "kv_inverse" + std::to_string(i);
      const std::string table = std::string(inv.on_source ? "src_tables[" : "dst_tables[") + std::to_string(inv.table) + "]";
      w.line("std::vector<int32_t> " + name + "(" + std::to_string(inv.slots) + ", -1);");
      w.line("for (int64_t token = 0; token < num_tokens; ++token) " + name + "[static_cast<size_t>(" + table +
             "[token])] = static_cast<int32_t>(token);");
      source_list.push_back(name + ".data()");
      target_list.push_back(name + ".data()");
    }
    auto joined = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    w.line("const int32_t* const kv_src_tables[] = {" + joined(source_list) + "};");
    w.line("const int32_t* const kv_dst_tables[] = {" + joined(target_list) + "};");
    run_src_tables = "kv_src_tables";
    run_dst_tables = "kv_dst_tables";
  }
  w.line("const int parts = num_threads < 1 ? 1 : num_threads;");
  // Streaming stores pay off for moves much larger than the caches, into aligned targets.
  const auto& T = *p.target_bound;
  const std::int64_t target_bytes = layout::byte_offset(layout::storage_elements(T), T.element_bytes());
  std::int64_t bytes_per_token = std::max<std::int64_t>(1, target_bytes / std::max<std::int64_t>(1, plan.capacity));
  w.line("bool stream = num_tokens >= " + i64(o.streaming_from_bytes / bytes_per_token) + ";");
  // 16-byte streaming stores need 16-byte aligned targets (a line-aligned one is not needed: kv_stream_copy).
  w.line("for (int i = 0; i < " + std::to_string(instance_count(T)) + "; ++i) stream = stream && reinterpret_cast<uintptr_t>(dst[i]) % 16 == 0;");
  w.line("const auto run = " + run_part + ";");
  w.line("auto work = [&](int64_t part) { run(src, dst, " + run_src_tables + ", " + run_dst_tables + ", num_tokens, part, parts, stream); };");
  w.line("std::vector<std::thread> workers;");
  w.line("for (int part = 1; part < parts; ++part) workers.emplace_back(work, part);");
  w.line("work(0);");
  w.line("for (auto& t : workers) t.join();");
  w.line("return 0;");
  w.close();
}

}  // namespace

std::vector<std::string> pointer_checks(const prove::Proof& p, const Plan& plan) {
  const auto& S = *p.source_bound;
  const auto& T = *p.target_bound;
  std::vector<std::string> out;
  out.push_back("if (src == nullptr || dst == nullptr) return 3;");
  out.push_back("for (int i = 0; i < " + std::to_string(instance_count(S)) + "; ++i) if (src[i] == nullptr) return 3;");
  out.push_back("for (int i = 0; i < " + std::to_string(instance_count(T)) + "; ++i) if (dst[i] == nullptr) return 3;");
  out.push_back("if (num_tokens < 0 || num_tokens > " + i64(plan.capacity) + ") return 1;");
  for (const auto* side : {&S, &T}) {
    if (side->tables.empty()) continue;
    std::string arr = side == &S ? "src_tables" : "dst_tables";
    out.push_back("if (" + arr + " == nullptr) return 3;");
    out.push_back("for (int i = 0; i < " + std::to_string(side->tables.size()) + "; ++i) if (" + arr + "[i] == nullptr) return 3;");
  }
  return out;
}

namespace {

std::string table_array(const TableRead& r) { return r.on_source ? "src_tables" : "dst_tables"; }

// The entry a read takes, as C over `token` (a nested lookup reads the same side's tables).
std::string entry_c(const TableRead& r) {
  const std::string arr = table_array(r);
  return expr::to_c(r.entry, [&](const expr::Node& node, const std::string& inner) -> std::string {
    if (node.op == expr::Op::Coord) return "token";
    return "static_cast<int64_t>(" + arr + "[" + std::to_string(node.value) + "][" + inner + "])";
  });
}

}  // namespace

std::vector<DistinctCheck> distinct_checks(const prove::Proof& p, const Plan& plan) {
  std::vector<DistinctCheck> out;
  for (const TableRead& r : plan.reads) {
    const auto& t = (r.on_source ? *p.source_bound : *p.target_bound).tables[static_cast<std::size_t>(r.table)];
    const std::string table = table_array(r) + "[" + std::to_string(r.table) + "]";
    auto it = std::find_if(out.begin(), out.end(), [&](const DistinctCheck& c) { return c.table == table; });
    if (it == out.end()) it = out.insert(out.end(), DistinctCheck{table, t.first, t.end, {}});
    it->entries.push_back(entry_c(r));
  }
  return out;
}

std::vector<std::string> table_checks(const prove::Proof& p, const Plan& plan, const std::string& fail) {
  std::vector<std::string> out;
  for (const TableRead& r : plan.reads) {
    const auto& b = r.on_source ? *p.source_bound : *p.target_bound;
    const auto& t = b.tables[static_cast<std::size_t>(r.table)];
    const std::string arr = table_array(r);
    std::string entry = entry_c(r);
    out.push_back("{ const int64_t e = " + entry + "; if (e < 0 || e >= " + i64(t.length) + ") { " + fail +
                  " } else { const int64_t v = " + arr + "[" + std::to_string(r.table) + "][e]; if (v < " + i64(t.first) +
                  " || v >= " + i64(t.end) + ") { " + fail + " } } }");
  }
  return out;
}

namespace {

// The instruction-set variants every planned kernel carries. The same cells are printed once per variant,
// in a namespace of their own, and the copy helpers read KV_AVX2 to pick their vector width; the AVX2 one
// is compiled with the target attribute (GCC's target pragma, Clang's attribute pragma), so the kernel
// builds with the caller's flags and still runs on a CPU without AVX2. One helper in AVX-512 (its own
// target attribute, outside both variants) serves the AVX2 variant where the CPU has it (kv_use_avx512).
const char* kIsaSelection = R"(// The variant a call runs: AVX2 when the CPU has it; the baseline (SSE2 on x86-64, portable elsewhere)
// otherwise, or when the environment says KVLAYOUT_ISA=baseline (the tests run every variant against
// the byte oracle).
[[maybe_unused]] static inline bool kv_use_avx2() {
#if KV_X86_DISPATCH
  const char* forced = std::getenv("KVLAYOUT_ISA");
  if (forced != nullptr && std::strcmp(forced, "baseline") == 0) return false;
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Whether the AVX2 variant's transposes of 16-token lines and of whole 32 x 32 gathered-row blocks take
// AVX-512 (kv_transpose_lines16_avx512, kv_transpose_rows32_avx512): where the CPU has AVX-512 F and BW,
// unless the environment says KVLAYOUT_ISA=baseline or =avx2 (the tests run the AVX2 variant both ways
// against the byte oracle).
[[maybe_unused]] static inline bool kv_use_avx512() {
#if KV_X86_DISPATCH
  const char* forced = std::getenv("KVLAYOUT_ISA");
  if (forced != nullptr && (std::strcmp(forced, "baseline") == 0 || std::strcmp(forced, "avx2") == 0)) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}
// Read by kv_transpose_lines16; written by each call (kv_run_part).
static std::atomic<bool> kv_avx512{false};

#if KV_X86_DISPATCH
// kv_transpose_lines16 where the 32 source rows are packed 32 bytes apart (a 1 KiB span: 32 channels of a
// legacy value block's 16 tokens), in AVX-512 registers: each 64-byte load holds two channels' 16 tokens;
// the 8 x 8 unpack networks of two groups of 16 channels leave a token's even and odd channels in
// different 128-bit lanes, and one two-source word permute per target line gathers its 32 channels.
// 64 shuffles per KiB against the AVX2 network's 128, and one 64-byte store per line. Measured on an Intel
// Xeon (AVX-512 BW, 2 MiB L2): in cache 21.1-21.5 -> 25.4-25.8 GiB/s; vllm-paged-legacy ->
// vllm-flash-nhd's V alone, 256 MiB, three processes of 7 interleaved repetitions, 1 / 2 threads, ratio
// over the pair's bytes: 1.22-1.58x / 1.11-1.34x of memcpy -> 1.49-1.68x / 1.53-1.59x; whole pairs,
// kvlayout_bench_sweep --ab KVLAYOUT_ISA=avx2 over every pair out of vllm-paged-legacy (three processes of
// 5 interleaved repetitions): the 26 kernels that call it 1.01-1.03x / 1.01-1.03x as fast at median, each
// kernel's median 0.96-1.07x / 0.97-1.06x (vllm-flash-nhd 1.03 / 1.06, vllm-packed-nhd 1.04 / 1.02); the
// kernels into the legacy cache, which do not call it, 1.00x / 1.00x.
// GCC 12's own AVX-512 unpack intrinsics pass _mm512_undefined_epi32() (a self-initialised variable) as the
// masked-off source, which -Wuninitialized reports at -O2 in every caller.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class Rows>
__attribute__((target("avx512f,avx512bw"))) static void kv_transpose_lines16_avx512(const Rows& to, const char* from, bool stream) {
  __m512i c[2][8];  // c[g][k]: lane 0 token k, channels 16 g + 0, 2, .., 14; lane 1 token 8 + k, even; lanes 2, 3 odd
  KV_UNROLL for (int g = 0; g < 2; ++g) {
    __m512i r[8], t[8], u[8];
    KV_UNROLL for (int a = 0; a < 8; ++a) r[a] = _mm512_loadu_si512(from + (8 * g + a) * 64);
    KV_UNROLL for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    KV_UNROLL for (int i = 0; i < 2; ++i)
      KV_UNROLL for (int j = 0; j < 2; ++j) {
        u[4 * i + 2 * j] = _mm512_unpacklo_epi32(t[4 * i + j], t[4 * i + j + 2]);
        u[4 * i + 2 * j + 1] = _mm512_unpackhi_epi32(t[4 * i + j], t[4 * i + j + 2]);
      }
    KV_UNROLL for (int i = 0; i < 4; ++i) {
      c[g][2 * i] = _mm512_unpacklo_epi64(u[i], u[i + 4]);
      c[g][2 * i + 1] = _mm512_unpackhi_epi64(u[i], u[i + 4]);
    }
  }
  // Target word w is channel w: from c[w / 16], lane 2 (w % 2) (+ 1 for tokens 8..15), word (w % 16) / 2.
  alignas(64) static const uint16_t first_tokens[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23,
                                                        32, 48, 33, 49, 34, 50, 35, 51, 36, 52, 37, 53, 38, 54, 39, 55};
  alignas(64) static const uint16_t last_tokens[32] = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31,
                                                       40, 56, 41, 57, 42, 58, 43, 59, 44, 60, 45, 61, 46, 62, 47, 63};
  const __m512i first = _mm512_load_si512(first_tokens), last = _mm512_load_si512(last_tokens);
  KV_UNROLL for (int k = 0; k < 8; ++k)
    KV_UNROLL for (int half = 0; half < 2; ++half) {
      char* line = to(k + 8 * half);
      const __m512i words = _mm512_permutex2var_epi16(c[0][k], half == 0 ? first : last, c[1][k]);
      if (stream && reinterpret_cast<uintptr_t>(line) % 64 == 0) _mm512_stream_si512(reinterpret_cast<__m512i*>(line), words);
      else _mm512_storeu_si512(line, words);
    }
}

// kv_transpose_row_groups<4> for 32 target rows (a 32 x 32 block of 16-bit elements whose rows are placed
// one by one: llama.cpp's transposed V against a token-major cache), in AVX-512 registers: each source
// row's 64-byte line in one load, the 128-bit lanes of four rows a group apart transposed first, then the
// 8 x 8 unpack network within the lanes; one 64-byte store per target line. 160 shuffles a block against
// the AVX2 network's 256. Measured on an Intel Xeon (AVX-512 BW): in cache 14.3 -> 18.6-21.0 GiB/s;
// kvlayout_bench_sweep --ab KVLAYOUT_ISA=avx2 over every pair into or out of llamacpp-vtrans (two processes
// of 5 interleaved repetitions, 256 MiB, 1 / 2 threads, each kernel's median): into it 1.10x / 1.11x as fast
// at median (0.96-1.14x / 1.05-1.31x; 0.64x / 0.63x of memcpy -> 0.70x / 0.70x), out of it 1.13x / 1.12x
// (1.03-1.15x / 1.05-1.15x; 0.67x / 0.69x -> 0.74x / 0.76x).
[[maybe_unused]] __attribute__((target("avx512f,avx512bw"))) static void kv_transpose_rows32_avx512(char* const* to, int64_t to_at, const char* const* from,
                                                                                 int64_t from_at, bool stream) {
  __m512i d[4][8];  // d[L][a]: lane g holds lane L of source row 8 g + a
  KV_UNROLL for (int a = 0; a < 8; ++a) {
    const __m512i r0 = _mm512_loadu_si512(from[a] + from_at), r1 = _mm512_loadu_si512(from[8 + a] + from_at);
    const __m512i r2 = _mm512_loadu_si512(from[16 + a] + from_at), r3 = _mm512_loadu_si512(from[24 + a] + from_at);
    const __m512i t0 = _mm512_shuffle_i64x2(r0, r1, 0x44), t1 = _mm512_shuffle_i64x2(r0, r1, 0xEE);
    const __m512i t2 = _mm512_shuffle_i64x2(r2, r3, 0x44), t3 = _mm512_shuffle_i64x2(r2, r3, 0xEE);
    d[0][a] = _mm512_shuffle_i64x2(t0, t2, 0x88);
    d[1][a] = _mm512_shuffle_i64x2(t0, t2, 0xDD);
    d[2][a] = _mm512_shuffle_i64x2(t1, t3, 0x88);
    d[3][a] = _mm512_shuffle_i64x2(t1, t3, 0xDD);
  }
  KV_UNROLL for (int L = 0; L < 4; ++L) {  // target rows 8 L .. 8 L + 7
    __m512i t[8], u[8];
    KV_UNROLL for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_unpacklo_epi16(d[L][2 * i], d[L][2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_epi16(d[L][2 * i], d[L][2 * i + 1]);
    }
    KV_UNROLL for (int i = 0; i < 2; ++i) {
      KV_UNROLL for (int j = 0; j < 2; ++j) {
        u[4 * i + 2 * j] = _mm512_unpacklo_epi32(t[4 * i + j], t[4 * i + j + 2]);
        u[4 * i + 2 * j + 1] = _mm512_unpackhi_epi32(t[4 * i + j], t[4 * i + j + 2]);
      }
    }
    KV_UNROLL for (int i = 0; i < 4; ++i) {
      KV_UNROLL for (int half = 0; half < 2; ++half) {
        const __m512i words = half == 0 ? _mm512_unpacklo_epi64(u[i], u[i + 4]) : _mm512_unpackhi_epi64(u[i], u[i + 4]);
        char* line = to[8 * L + 2 * i + half] + to_at;
        if (stream && reinterpret_cast<uintptr_t>(line) % 64 == 0) _mm512_stream_si512(reinterpret_cast<__m512i*>(line), words);
        else _mm512_storeu_si512(line, words);
      }
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

)";

// The name suffix of a nest printed in a cell's second order, and the flag of the per-CPU choice
// (cpu_choices.hpp) that takes it: one row per CpuOrder, so that a new one cannot borrow another's choice.
struct SecondOrderNames {
  std::string suffix, choice;
};
SecondOrderNames second_order_names(CpuOrder order) {
  switch (order) {
    case CpuOrder::by_source: return {"_by_source", "reads_by_source"};
    case CpuOrder::instance_groups: return {"_in_groups", "instance_groups"};
    case CpuOrder::read_streams_in_groups: return {"_in_groups", "read_streams_in_groups"};
    case CpuOrder::interleaved_rows: return {"_interleaved_rows", "interleaved_rows"};
    case CpuOrder::none: break;
  }
  throw std::logic_error("a cell without a second order has no second nest");
}

void print_variant(CodeWriter& w, const prove::Proof& p, const Plan& plan, bool avx2) {
  const int sb = spec::dtype_bytes(p.source_layout->dtype), tb = spec::dtype_bytes(p.target_layout->dtype);
  const bool convert = p.source_layout->dtype != p.target_layout->dtype;
  if (avx2)
    w.raw("#if KV_X86_DISPATCH\n#if defined(__clang__)\n#pragma clang attribute push(__attribute__((target(\"avx2\"))), apply_to = function)\n"
          "#else\n#pragma GCC push_options\n#pragma GCC target(\"avx2\")\n#endif\n");
  w.line(std::string("#define KV_AVX2 ") + (avx2 ? "1" : "0"));
  w.line(std::string("namespace kv_") + (avx2 ? "avx2" : "baseline") + " {").line();
  w.raw(kCopies);
  if (convert) w.raw(kConvertingTile);
  // A cell riding a folded tile (riding_runs.hpp) is copied in the tile's nest, never in its own.
  std::vector<std::vector<Sibling>> groups = sibling_groups(plan, sb, tb);
  groups.erase(std::remove_if(groups.begin(), groups.end(),
                              [&](const std::vector<Sibling>& g) { return plan.cells[static_cast<std::size_t>(g.front().cell)].ridden_by >= 0; }),
               groups.end());
  // A nest read in the source's order is printed again in the target's order, taken when a target instance
  // starts off a 64-byte line: there a run's part lines are shared with runs the source's order writes much
  // later. Measured (256 MiB, one thread, GiB/s): vllm-flash-nhd -> vllm-flash-hnd on lines 10.3-10.7 by
  // the source against 8.7-8.9 by the target, with every target 16 bytes past a page 5.3 against 6.7-8.7;
  // flashinfer-nhd -> flashinfer-hnd off a line 4.4-4.5 against 7.4-7.6.
  Plan off_lines = plan;
  for (Cell& c : off_lines.cells)
    if (c.source_order_from >= 0) c.loops = c.target_order_loops, c.source_order_from = -1;
  auto has_off_lines_nest = [&](const std::vector<Sibling>& group) { return plan.cells[static_cast<std::size_t>(group.front().cell)].source_order_from >= 0; };
  // A nest with a second order (Cell::cpu_loops) is printed again in it, taken on the CPUs that chose it
  // (second_order_names) when every target instance starts on a line: that order writes whole target lines
  // only there.
  Plan per_cpu = plan;
  for (Cell& c : per_cpu.cells) {
    if (c.cpu_order == CpuOrder::none) continue;
    c.loops = c.cpu_loops;
    c.source_order_from = c.cpu_order == CpuOrder::by_source ? c.cpu_loops_from : -1;
    c.target_order_loops.clear();
  }
  auto cpu_order_of = [&](const std::vector<Sibling>& group) { return plan.cells[static_cast<std::size_t>(group.front().cell)].cpu_order; };
  auto has_per_cpu_nest = [&](const std::vector<Sibling>& group) { return cpu_order_of(group) != CpuOrder::none; };
  const bool interleaved = interleaved_passes(plan, groups, sb);
  const std::int64_t block_passes = interleaved ? block_pass_count(plan, groups, sb) : 0;
  for (const auto& group : groups) {
    print_cell(w, plan, p, group, sb, tb, convert, "", block_passes);
    w.line();
    if (has_off_lines_nest(group)) {
      print_cell(w, off_lines, p, group, sb, tb, convert, "_off_lines", block_passes);
      w.line();
    }
    if (has_per_cpu_nest(group)) {
      print_cell(w, per_cpu, p, group, sb, tb, convert, second_order_names(cpu_order_of(group)).suffix, block_passes);
      w.line();
    }
  }
  w.open("static void run_part(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, "
         "int64_t n, int64_t part, int64_t parts, bool stream)");
  if (std::any_of(groups.begin(), groups.end(), has_off_lines_nest) || std::any_of(groups.begin(), groups.end(), has_per_cpu_nest)) {
    w.line("bool kv_lines = true;  // every target instance starts on a 64-byte line");
    w.line("for (int i = 0; i < " + std::to_string(instance_count(*p.target_bound)) +
           "; ++i) kv_lines = kv_lines && reinterpret_cast<uintptr_t>(T[i]) % 64 == 0;");
  }
  auto nest = [&](const std::vector<Sibling>& group) {
    const std::string name = "cell" + std::to_string(group.front().cell);
    const std::string by_target = has_off_lines_nest(group) ? "(kv_lines ? " + name + " : " + name + "_off_lines)" : name;
    if (!has_per_cpu_nest(group)) return by_target;
    const SecondOrderNames second = second_order_names(cpu_order_of(group));
    return "(kv_lines && " + cpu_choice_load(second.choice) + " ? " + name + second.suffix + " : " + by_target + ")";
  };
  if (interleaved) {
    // One pass per flattened iteration of the first nest (each nest's part is split as evenly; see print_cell),
    // at most 2^20 passes, so that a part's length times the pass index stays far inside int64_t; and
    // within each, where the call's CPU takes them (kv_block_passes), one block pass per iteration of the
    // loop inside (block_pass_count).
    const Cell& first = plan.cells[static_cast<std::size_t>(groups.front().front().cell)];
    w.line("const int64_t kv_total = " + flat_total(first) + ";");
    w.line("const int64_t kv_passes = kv_min(INT64_C(1048576), kv_max(INT64_C(1), kv_total * (part + 1) / parts - kv_total * part / parts));");
    w.open("for (int64_t sub = 0; sub < kv_passes; ++sub)");
    if (block_passes > 0) {
      w.line("const int64_t kv_inners = " + cpu_choice_load("block_passes") + " ? " + i64(block_passes) + " : INT64_C(1);");
      w.open("for (int64_t inner = 0; inner < kv_inners; ++inner)");
      for (const auto& group : groups) w.line(nest(group) + "(S, T, st, dt, n, part, parts, sub, kv_passes, inner, kv_inners, stream);");
      w.close();
    } else {
      for (const auto& group : groups) w.line(nest(group) + "(S, T, st, dt, n, part, parts, sub, kv_passes, stream);");
    }
    w.close();
  } else {
    for (const auto& group : groups) w.line(nest(group) + "(S, T, st, dt, n, part, parts, 0, 1, stream);");
  }
  w.line("(void)S; (void)T; (void)st; (void)dt; (void)n; (void)part; (void)parts;");
  w.line("#if defined(__SSE2__)");
  w.line("if (stream) _mm_sfence();  // streaming stores are visible once this thread's part returns");
  w.line("#endif");
  w.close();
  w.line().line(std::string("}  // namespace kv_") + (avx2 ? "avx2" : "baseline")).line("#undef KV_AVX2");
  if (avx2) w.raw("#if defined(__clang__)\n#pragma clang attribute pop\n#else\n#pragma GCC pop_options\n#endif\n#endif  // KV_X86_DISPATCH\n");
  w.line();
}

}  // namespace

std::string cpu_kernel(const prove::Proof& p, const Plan& declared_plan, const EmitOptions& o) {
  const int sb = spec::dtype_bytes(p.source_layout->dtype);
  const bool convert = p.source_layout->dtype != p.target_layout->dtype;
  // Ridden only where print_gathered_tile takes straight blocks, with no staged alternative the call's CPU
  // might pick instead.
  auto straight_blocks = [&](const Cell& c) { return !has_staged_bursts(c, sb) && !stage_gathered_chunks(c, sb); };
  const Plan plan = fold_riding_runs(align_interleaved_passes(declared_plan, sb), convert, straight_blocks);
  CodeWriter w;
  w.raw(header_comment(p, plan, o)).line().raw(prologue(p, o)).raw(kIsaSelection).raw(cpu_choice_declarations());
  print_variant(w, p, plan, false);
  print_variant(w, p, plan, true);
  w.line("using RunPart = void (*)(const void* const*, void* const*, const int32_t* const*, const int32_t* const*, int64_t, int64_t, int64_t, bool);");
  w.line("// The variant (and kv_use_avx512) and the per-CPU choices (each kv_..._wanted() above) this call runs with.");
  w.open("static RunPart kv_run_part()");
  print_choice_stores(w);
  w.line("kv_avx512.store(kv_use_avx512(), std::memory_order_relaxed);");
  w.line("#if KV_X86_DISPATCH");
  w.line("if (kv_use_avx2()) return kv_avx2::run_part;");
  w.line("#endif");
  w.line("return kv_baseline::run_part;");
  w.close();
  w.line().line("}  // namespace kvlayout_generated_" + o.name).line();
  print_entry(w, p, plan, o, "kv_run_part()");
  return w.str();
}

std::string cpu_naive_kernel(const prove::Proof& p, const Plan& plan, const EmitOptions& o) {
  const auto& S = *p.source_bound;
  const auto& T = *p.target_bound;
  const int sb = spec::dtype_bytes(S.layout->dtype), tb = spec::dtype_bytes(T.layout->dtype);
  const bool convert = S.layout->dtype != T.layout->dtype;
  CodeWriter w;
  w.raw(header_comment(p, plan, o)).line().raw(prologue(p, o));
  w.line("// Naive reference: every position decoded from a flat index with div/mod, both address functions");
  w.line("// evaluated per element. For measuring the planned kernel against; not for serving.");
  w.open("static void run_part(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, "
         "int64_t n, int64_t part, int64_t parts, bool stream)");
  w.line("(void)st; (void)dt; (void)stream;");
  std::int64_t box = 1;
  for (std::size_t c = 0; c < S.coord_extents.size(); ++c)
    if (static_cast<int>(c) != plan.token_coord) box *= S.coord_extents[c];
  w.line("const int64_t total = " + i64(box) + " * n;");
  w.line("const int64_t begin = total * part / parts, end = total * (part + 1) / parts;");
  w.open("for (int64_t flat = begin; flat < end; ++flat)");
  w.line("int64_t rest = flat;");
  for (std::size_t c = S.coord_extents.size(); c-- > 0;) {
    std::string extent = static_cast<int>(c) == plan.token_coord ? "n" : i64(S.coord_extents[c]);
    w.line("const int64_t c" + std::to_string(c) + " = rest % " + extent + "; rest /= " + extent + ";");
  }
  auto side = [&](const layout::BoundLayout& b, bool source) {
    const std::string ptrs = source ? "S" : "T", tables = source ? "st" : "dt", tag = source ? "S" : "T";
    w.line(std::string(source ? "const char* " : "char* ") + "p" + tag + " = nullptr; int64_t o" + tag + " = 0;");
    std::int64_t first = 0;
    bool any = false;
    for (const auto& t : b.tensors) {
      for (const auto& v : t.views) {
        auto leaf = [&](const expr::Node& node, const std::string& entry) -> std::string {
          if (node.op == expr::Op::Coord) return "c" + std::to_string(node.value);
          return "static_cast<int64_t>(" + tables + "[" + std::to_string(node.value) + "][" + entry + "])";
        };
        std::string offset = i64(v.offset);
        for (std::size_t k = 0; k < v.index.size(); ++k) offset += " + (" + expr::to_c(v.index[k], leaf) + ") * " + i64(v.strides[k]);
        // The instance is coord(per) - per_first (in-bounds proved it lies in [0, instances) where held).
        std::string instance = t.per >= 0 ? i64(first - t.per_first) + " + c" + std::to_string(t.per) : i64(first);
        w.line(std::string(any ? "else " : "") + "if (" + expr::to_c(v.holds, leaf) + ") { p" + tag + " = static_cast<" +
               (source ? "const char*" : "char*") + ">(" + ptrs + "[" + instance + "]); o" + tag + " = " + offset + "; }");
        any = true;
      }
      first += t.instances;
    }
  };
  side(S, true);
  side(T, false);
  w.line("if (pS == nullptr || pT == nullptr) continue;");
  if (!convert) {
    w.line("std::memcpy(pT + oT * " + std::to_string(tb) + ", pS + oS * " + std::to_string(sb) + ", " + std::to_string(sb) + ");");
  } else {
    w.line("uint32_t bits = 0;");
    w.line("std::memcpy(&bits, pS + oS * " + std::to_string(sb) + ", " + std::to_string(sb) + ");");
    w.line("const uint32_t out = kv_convert(bits);");
    w.line("std::memcpy(pT + oT * " + std::to_string(tb) + ", &out, " + std::to_string(tb) + ");");
  }
  w.close();
  w.close();
  w.line().line("}  // namespace kvlayout_generated_" + o.name).line();
  print_entry(w, p, plan, o, "run_part");
  return w.str();
}

}  // namespace kvlayout::emit

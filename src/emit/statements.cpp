#include "emit/statements.hpp"

#include <algorithm>

#include "emit/code_writer.hpp"
#include "emit/cpu_choices.hpp"
#include "expr/c_print.hpp"

namespace kvlayout::emit {
namespace {

// The loop level that binds a mode: its position in the loop order, or -1 for a constant (extent 1).
int level_of(const Cell& cell, int mode) {
  auto it = std::find(cell.loops.begin(), cell.loops.end(), mode);
  return it == cell.loops.end() ? -1 : static_cast<int>(it - cell.loops.begin());
}

int level_of(const Cell& cell, const std::vector<int>& modes) {
  int level = -1;
  for (int m : modes) level = std::max(level, level_of(cell, m));
  return level;
}

// A coordinate's value as C: its low end where it has one digit, plus each digit's term, `digit(m)` giving
// the digit's C (its variable, or another expression in its place) or "" to leave it out. The one home of
// the formula both coordinate_value and least_value print.
template <typename Digit>
std::string coordinate_sum(const Cell& cell, const CellCoordinate& c, Digit digit) {
  std::string s = c.lo && c.modes.size() == 1 ? i64(c.lo) : "";
  for (int m : c.modes) {
    const std::string var = digit(m);
    if (var.empty()) continue;
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    s += (s.empty() ? "" : " + ") + (mode.weight == 1 ? var : var + " * " + i64(mode.weight));
  }
  return s;
}

std::string coordinate_value(const Cell& cell, const CellCoordinate& c, int without = -1) {
  const std::string s = coordinate_sum(cell, c, [&](int m) { return m == without ? std::string() : cell.modes[static_cast<std::size_t>(m)].var; });
  return s.empty() ? i64(0) : s;
}

// The least value a guarded coordinate takes below `level` once its digits bound at `level` or above are
// known (the rest at 0; every digit's weight is positive), with the digit bound at `level` replaced by
// `at_level` (its variable, or the iteration `ahead` of it). Empty where the coordinate is not guarded or
// none of its digits is bound at `level`.
std::string least_value(const Cell& cell, const CellCoordinate& c, int level, const std::string& at_level) {
  if (!c.guarded) return "";
  if (std::any_of(c.modes.begin(), c.modes.end(), [&](int m) { return cell.modes[static_cast<std::size_t>(m)].weight <= 0; })) return "";
  bool here = false;
  const std::string s = coordinate_sum(cell, c, [&](int m) {
    const int l = level_of(cell, m);
    if (l < 0 || l > level) return std::string();
    if (l == level) here = true;
    return l == level ? at_level : cell.modes[static_cast<std::size_t>(m)].var;
  });
  return here ? s : "";
}

// Whether some digit of the coordinate is still to be bound below `level`: a deeper loop's, or one a
// tile or run spans (extent > 1, not a loop). Where none is, the whole value's guard covers the level.
bool digits_left_below(const Cell& cell, const CellCoordinate& c, int level) {
  return std::any_of(c.modes.begin(), c.modes.end(), [&](int m) {
    const int l = level_of(cell, m);
    return l > level || (l < 0 && cell.modes[static_cast<std::size_t>(m)].extent > 1);
  });
}

// Whether a side's table atom read at `level` takes a digit of the coordinate.
bool level_reads_digit_of(const Cell& cell, const CellCoordinate& c, int level) {
  for (const SideForm* f : {&cell.source, &cell.target})
    for (const Atom& a : f->atoms)
      if (!reads_tile_mode(cell, a) && level_of(cell, a.modes) == level &&
          std::any_of(a.modes.begin(), a.modes.end(), [&](int m) { return std::find(c.modes.begin(), c.modes.end(), m) != c.modes.end(); }))
        return true;
  return false;
}

std::string atom_name(bool source, std::size_t i) { return std::string(source ? "aS" : "aT") + std::to_string(i); }
std::string offset_name(bool source, int level) {
  return std::string(source ? "oS" : "oT") + (level < 0 ? "_top" : std::to_string(level));
}

std::string atom_value(const Cell& cell, const Atom& a, const std::string& tables) {
  return expr::to_c(a.e, [&](const expr::Node& node, const std::string& entry) {
    if (node.op == expr::Op::Coord) return cell.modes[static_cast<std::size_t>(node.value)].var;
    return "static_cast<int64_t>(" + tables + "[" + std::to_string(node.value) + "][" + entry + "])";
  });
}

}  // namespace

std::string slot_absent(const Cell& cell, int coord, const Inputs& in) {
  const CellCoordinate& c = cell.coords[static_cast<std::size_t>(coord)];
  return in.src_tables + "[" + std::to_string(c.inverse) + "][" + coordinate_value(cell, c) + "] < 0";
}

std::vector<std::string> lookup_row_offset(const Cell& cell, bool source, int row, const std::string& base, const Inputs& in, const std::string& name) {
  const SideForm& f = source ? cell.source : cell.target;
  std::vector<std::string> out;
  std::string sum = base;
  for (std::size_t i = 0; i < f.atoms.size(); ++i) {
    const Atom& a = f.atoms[i];
    if (std::find(a.modes.begin(), a.modes.end(), row) == a.modes.end()) continue;
    out.push_back("const int64_t " + atom_name(source, i) + " = " + atom_value(cell, a, source ? in.src_tables : in.dst_tables) + ";");
    sum += " + " + atom_name(source, i) + " * " + i64(a.coef);
  }
  out.push_back("const int64_t " + name + " = " + sum + ";");
  return out;
}

std::vector<std::string> row_offset(const Cell& cell, bool source, const Inputs& in, const std::string& name) {
  const SideForm& f = source ? cell.source : cell.target;
  const int mode = source ? cell.tile_target_contiguous : cell.tile_source_contiguous;
  std::vector<std::string> out;
  std::string sum = final_offset(cell, source) + " + " + cell.modes[static_cast<std::size_t>(mode)].var + " * " +
                    i64(f.stride[static_cast<std::size_t>(mode)]);
  for (std::size_t i = 0; i < f.atoms.size(); ++i) {
    if (!reads_tile_mode(cell, f.atoms[i])) continue;
    out.push_back("const int64_t " + atom_name(source, i) + " = " + atom_value(cell, f.atoms[i], source ? in.src_tables : in.dst_tables) + ";");
    sum += " + " + atom_name(source, i) + " * " + i64(f.atoms[i].coef);
  }
  out.push_back("const int64_t " + name + " = " + sum + ";");
  return out;
}

std::string pointer_name(bool source) { return source ? "pS" : "pT"; }

namespace {

// The src[] / dst[] index (as C) of side f's instance, moved by `shift`: instance = coord -
// instance_coord_first (per_range FIRST), at index instance_first + instance.
std::string instance_index(const Cell& cell, const SideForm& f, std::int64_t shift) {
  std::string index = i64(f.instance_first + shift - f.instance_coord_first);
  if (f.instance_coord >= 0) index += " + " + coordinate_value(cell, cell.coords[static_cast<std::size_t>(f.instance_coord)]);
  return index;
}

}  // namespace

std::vector<std::string> shifted_pointer(const Cell& cell, int level, const Inputs& in, bool source, std::int64_t shift, const std::string& name) {
  const SideForm& f = source ? cell.source : cell.target;
  const int at = f.instance_coord >= 0 ? level_of(cell, cell.coords[static_cast<std::size_t>(f.instance_coord)].modes) : -1;
  if (at != level) return {};
  return {std::string(source ? "const char* const " : "char* const ") + name + " = static_cast<" + (source ? "const char*" : "char*") + ">(" +
          (source ? in.src : in.dst) + "[" + instance_index(cell, f, shift) + "]);"};
}

std::vector<std::string> next_instance_pointer(const Cell& cell, int level, const Inputs& in, std::int64_t shift, std::int64_t ahead,
                                               const std::string& bound, const std::string& name) {
  const int mode = cell.loops[static_cast<std::size_t>(level)];
  const CellCoordinate& c = cell.coords[static_cast<std::size_t>(cell.source.instance_coord)];
  // One digit: its loop's bound; two (phase 5f's instance groups, looped in turn): the coordinate's end.
  const std::string within = c.modes.size() == 1 ? cell.modes[static_cast<std::size_t>(mode)].var + " + " + i64(ahead) + " < " + bound
                                                 : coordinate_value(cell, c) + " + " + i64(ahead) + " <= " + i64(c.hi);
  const std::string index = instance_index(cell, cell.source, shift);
  return {"const char* const " + name + " = static_cast<const char*>(" + in.src + "[" + within + " ? " + index + " + " + i64(ahead) + " : " + index +
          "]);"};
}

std::string next_displacement_name() { return "source_next"; }

std::int64_t bytes_per_iteration(const Cell& cell, int level, int source_bytes) {
  std::int64_t bytes = source_bytes;
  for (std::size_t m = 0; m < cell.modes.size(); ++m) {
    const int at = level_of(cell, static_cast<int>(m));
    if (at < 0 || at > level) bytes *= cell.modes[m].extent;
  }
  return bytes;
}

namespace {

// Whether each step of mode `m` moves the source by its stride alone: no table or other non-affine read
// depends on it, and it does not pick the source's tensor instance.
bool steps_source_by_stride(const Cell& cell, int m) {
  if (cell.source.stride[static_cast<std::size_t>(m)] == 0 || read_by_atoms(cell.source, m)) return false;
  if (cell.source.instance_coord < 0) return true;
  const auto& picks = cell.coords[static_cast<std::size_t>(cell.source.instance_coord)].modes;
  return std::find(picks.begin(), picks.end(), m) == picks.end();
}

// Whether loop `outer` moves the source only through table lookups read at `level` (the step's), which
// read the step's own loop too: its next iteration's block is one lookup away, as the step's next is. Not
// a loop that picks the source's instance, strides it or is read by another atom.
bool read_by_step_lookup_alone(const Cell& cell, int outer, int level) {
  if (cell.source.stride[static_cast<std::size_t>(outer)] != 0 || cell.modes[static_cast<std::size_t>(outer)].weight <= 0) return false;
  if (cell.source.instance_coord >= 0) {
    const auto& picks = cell.coords[static_cast<std::size_t>(cell.source.instance_coord)].modes;
    if (std::find(picks.begin(), picks.end(), outer) != picks.end()) return false;
  }
  const int step_mode = cell.loops[static_cast<std::size_t>(level)];
  bool looked_up = false;
  for (const Atom& a : cell.source.atoms) {
    if (std::find(a.modes.begin(), a.modes.end(), outer) == a.modes.end()) continue;
    if (reads_tile_mode(cell, a) || level_of(cell, a.modes) != level || a.e->op != expr::Op::Lookup ||
        std::find(a.modes.begin(), a.modes.end(), step_mode) == a.modes.end())
      return false;
    looked_up = true;
  }
  return looked_up;
}

// The innermost loop inside `block` (a lookup's level, or -1) that picks the source's tensor instance by
// itself (the instance coordinate is that one mode), moves nothing else of the source, and whose
// ceil(kNearestPrefetchBytes / its bytes an iteration) iterations ahead stay within half its extent; or
// {-1}. Per-layer source tensors read a run of each layer in turn (vllm-flash-nhd's kv_cache per layer into
// SGLang's page_first host pool, which holds a token's layers together): the loop around steps by the
// next token, 64 KiB of copying ahead, where the runs of the next layers are the reads coming next.
// Measured on an Intel Xeon, 256 MiB, 1 / 2 threads, two runs each in one process: vllm-flash-nhd ->
// sglang-host-page-first (2 KiB runs) 0.81x / 0.81-0.84x of memcpy with the next token prefetched,
// 0.92x / 0.92x with the layer two ahead, 0.90x / 0.91-0.92x four ahead, 0.91x / 0.89-0.93x eight.
// Tiles too: vLLM's legacy value cache into targets holding a block's layers together reads a 4 KiB box of
// each layer in turn, and its staged box had prefetched the next block (1 MiB ahead in Dynamo's universal
// block: evicted before it was read). Measured on an Ice Lake-class Xeon, 256 MiB, 7 interleaved
// repetitions, one process each, 1 / 2 threads, the layer ahead against the next block:
// vllm-paged-legacy -> dynamo-universal 1.16x / 1.16x as fast, -> vllm033-bhlnc 1.18x / 1.12x,
// -> sglang-host-page-first 1.11x / 1.12x, -> sglang-host-page-head 1.00x / 1.04x.
PrefetchStep next_instance_step(const Cell& cell, int block, int source_bytes) {
  const SideForm& f = cell.source;
  if (f.instance_coord < 0) return {};
  const CellCoordinate& picks = cell.coords[static_cast<std::size_t>(f.instance_coord)];
  // One digit, or two looped in turn (phase 5f's instance groups in the order that keeps the walk): the
  // instance then steps as one loop over the coordinate's values.
  if (picks.modes.size() > 2 || (picks.modes.size() == 2 && picks.lo != 0)) return {};
  const int mode = picks.modes.back(), level = level_of(cell, mode);
  if (picks.modes.size() == 2 && level_of(cell, picks.modes.front()) != level - 1) return {};
  const std::int64_t extent = picks.hi - picks.lo + 1;
  if (level <= block || cell.modes[static_cast<std::size_t>(mode)].weight != 1 || cell.modes[static_cast<std::size_t>(mode)].top_of_token ||
      f.stride[static_cast<std::size_t>(mode)] != 0 || read_by_atoms(f, mode))
    return {};
  for (int inner = level + 1; inner < static_cast<int>(cell.loops.size()); ++inner)
    if (read_by_atoms(f, cell.loops[static_cast<std::size_t>(inner)])) return {};
  const std::int64_t bytes = bytes_per_iteration(cell, level, source_bytes);
  const std::int64_t iterations = (kNearestPrefetchBytes + bytes - 1) / bytes;
  if (bytes > kFarthestPrefetchBytes || 2 * iterations > extent) return {};
  return {level, iterations, true};
}

}  // namespace

// Whether `loops` read the source in `least` (2 unless told) to kMostStreams page-long streams at once,
// which the hardware prefetcher follows: the one home of that test for prefetch_step's two uses.
static bool read_in_few_page_streams(const Cell& cell, const std::vector<int>& loops, int source_bytes, std::int64_t least = 2) {
  const std::int64_t reads = streams_along(cell, loops, cell.source, kLeastReadStreamBytes / source_bytes);
  return reads >= least && reads <= kMostStreams;
}

// The innermost loop whose next iteration moves the source through a table lookup (a block of a paged
// source), or -1: prefetch_step's and box_instance_step's one home of it.
static int lookup_block_level(const Cell& cell, int source_bytes) {
  int block = -1;
  for (const Atom& a : cell.source.atoms) {
    if (reads_tile_mode(cell, a)) continue;  // a gathered row's lookup, not a loop's
    // A table placing single elements within rows (llama.cpp's cells in its transposed V) lands the next
    // lookup inside the row being read, already in cache: prefetching it only cost an extra table read per
    // element (llamacpp-vtrans -> vllm-paged-legacy, in one process, 1 / 2 threads: 0.12-0.13x / 0.23x of
    // memcpy with it, 0.21-0.22x / 0.37-0.38x without).
    if (places_single_elements(a, source_bytes)) continue;
    int level = level_of(cell, a.modes);
    if (level >= 0 && a.e->op == expr::Op::Lookup) block = std::max(block, level);
  }
  return block;
}

PrefetchStep box_instance_step(const Cell& cell, int source_bytes, int box_level) {
  const PrefetchStep step = next_instance_step(cell, lookup_block_level(cell, source_bytes), source_bytes);
  return step.next_instance && step.level >= 0 && step.level < box_level ? step : PrefetchStep{};
}

PrefetchStep prefetch_step(const Cell& cell, int source_bytes, std::int64_t whole_block_bytes) {
  const int block = lookup_block_level(cell, source_bytes);
  bool on_page_hops = false;
  if (block >= 0 && bytes_per_iteration(cell, block, source_bytes) <= kFarthestPrefetchBytes) return {block, 1};
  if (block >= 0) {
    // A block too far ahead read inside in a few page-long streams (SGLang's host pages of 64 tokens, K's
    // and V's rows): the hardware follows them, and a prefetch nearer than the next block only costs its
    // instructions. Measured on an Ice Lake-class Xeon, sglang-host-page-first-direct -> lmcache056-packed
    // (256-byte runs, two 128 KiB streams a block), one process each, 1 / 2 threads: the next block
    // prefetched (256 KiB ahead) 0.64x / 0.67x of memcpy, two tokens ahead 0.69x / 0.76x, nothing 0.85x /
    // 0.88x.
    // Only a source of one tensor instance inside the block: where a loop inside it picks the instance
    // (vLLM's per-layer tensors into 0.3.3's cross-layer blocks), a step inside the block stays, as
    // measured before (vllm-flash-hnd -> vllm033-blnhc, two tokens ahead: 0.81x / 0.75x of memcpy, nothing
    // 0.77x / 0.80x there).
    const std::vector<int> inside(cell.loops.begin() + block + 1, cell.loops.end());
    bool instance_inside = false;
    if (cell.source.instance_coord >= 0)
      for (int m : cell.coords[static_cast<std::size_t>(cell.source.instance_coord)].modes) instance_inside = instance_inside || level_of(cell, m) > block;
    // One page-long read stream as well, where the target is written in a few streams too (at most
    // kMostStreams; counted in pages of the source's element size, the moves that reach here do not
    // convert): the hardware then follows all of them. Measured on an Ice Lake-class Xeon, one process
    // each, 5-7 interleaved repetitions, 1 / 2 threads, nothing against a strided loop's step inside the
    // block: vllm033-bhlnc -> flashinfer-hnd (one 256 KiB read stream a head, K's and V's 4 KiB write
    // streams a layer) 1.20x / 1.49x as fast, -> vllm-flashinfer-hnd 1.18x / 1.22x,
    // sglang0523-host-page-first-direct -> vllm-flashinfer-nhd 1.14x / 1.06x, ten other such pairs
    // 0.99-1.04x / 1.00-1.08x; twelve more at random 1.00x / 1.01x at the median, 0.95-1.16x / 0.98-1.16x
    // (sglang-host-page-head -> sglang0523-host-page-head 1.16x / 1.16x, trtllm-pool -> hf-dynamic 1.15x /
    // 1.15x). Where the target's writes are many more (a token's 32 layers into per-layer
    // tensors), the step stays: there the same change read 0.94x / 0.94x (sglang-host-page-head ->
    // vllm-flash-hnd) to 1.14x / 1.05x (sglang0523-host-page-first -> sglang0523-mha-hnd), no better at
    // the median over thirteen pairs.
    // Unless those streams hop a page at each step of a loop inside the block (StreamWalk::hops:
    // TensorRT-LLM's pool read a head's 4 KiB of K and of V, the next head's 8 KiB on, into vLLM's packed
    // HND pages and vLLM 0.3.3's blocks): the step is then taken where the call's CPU picks it
    // (kv_page_hop_prefetches). Measured on an AMD EPYC of Zen 4, the step inside every block read in few
    // page streams (134 kernels, one process, 5 interleaved repetitions, 1 / 2 threads): 0.96x / 0.99x as
    // fast at median, but out of TensorRT-LLM's pool into the HND-ordered targets (whose streams hop)
    // 1.10-1.23x / 1.14-1.25x, into its NHD-ordered ones (16 streams continued by the next token)
    // 0.93-1.00x / 0.95-1.00x. Where the streams hop alone (19 kernels, two processes, `--ab
    // KVLAYOUT_PAGE_HOP_PREFETCH=off`): 1.02-1.04x / 1.07x at median, faster in 13-14 / 14-15; TensorRT-LLM's
    // pool into vLLM's packed HND and 0.3.3's bhlnc, blhnc, blnhc and lbhnc pages 1.07-1.20x / 1.03-1.26x
    // (0.75-0.78x -> 0.90-0.94x of memcpy at one thread); the slowest, SGLang's page_first_direct pool into
    // vllm033-blnhc, 0.89-0.90x / 0.98-1.12x (still 0.93x of memcpy).
    const std::int64_t writes = streams_along(cell, inside, cell.target, kLeastReadStreamBytes / source_bytes);
    if (!instance_inside && read_in_few_page_streams(cell, inside, source_bytes, writes <= kMostStreams ? 1 : 2)) {
      if (!walk_streams(cell, inside, cell.source, kLeastReadStreamBytes / source_bytes).hops) return {};
      on_page_hops = true;
    }
  }
  // Tiles and runs shorter than a line of a source no loop looks up: prefetched where the call's CPU
  // picks it (kv_table_free_prefetches), the step found as for longer runs below but whatever streams the
  // loops read (a tile's rows are not one stream the hardware follows).
  const bool where_cpu_picks = block < 0 && (cell.tile_target_contiguous >= 0 || cell.run_elements * source_bytes < 64);
  if (block < 0) {
    if (whole_block_bytes >= kNearestPrefetchBytes) return {};
    if (!where_cpu_picks && read_in_few_page_streams(cell, cell.loops, source_bytes)) return {};
  }
  // No table, or its next block too far ahead: a loop (inside the block) that steps the source by a
  // stride. The innermost whose one iteration reads kNearestPrefetchBytes (with no table, the first pass
  // is skipped: a loop of 64 KiB iterations lands a prefetch far past the hardware's); else the innermost
  // taken enough iterations ahead to read them, where its extent leaves at least as many iterations that
  // prefetch as that do not. (Measured, sglang-host-page-first -> vllm-flash-nhd: the next token, 32 KiB
  // ahead, 0.86-0.89x of memcpy at one thread; four layers, 8 KiB, 0.83x.)
  // A source read without a table is prefetched too: runs of 2 KiB or less read one after another in one
  // stream leave one core waiting on the hardware prefetcher, which stops at each 4 KiB page. Measured on an
  // Intel Xeon, 256 MiB, 1 / 2 threads, two runs each in one process: sglang-mha -> vllm-flash-nhd (2 KiB
  // runs over the source's slots) 0.78-0.86x / 1.27-1.37x of memcpy -> 0.92x / 1.51x with the run 8 KiB
  // ahead prefetched (16 and 32 KiB ahead the same), lmcache056-t2d -> vllm-flash-nhd 0.76-0.79 / 1.26 ->
  // 0.90-0.91 / 1.46-1.53; over a sweep (every table-free source, one run against two), lmcache-2ltd ->
  // lmcache056-2ltd 0.78 -> 0.91, lmcache056-2ltd -> flashinfer-hnd 0.71 -> 0.86, hf-dynamic ->
  // sglang-host-page-first 0.62 -> 0.75. Not where whole blocks of 8 KiB or more are copied: kv_stream_copy
  // then reads the block's pages in two or four streams itself, and the prefetch only competed with them
  // (lmcache-mla -> vllm-mla's 18 KiB blocks 0.98 -> 0.88, hf-dynamic -> trtllm-pool's 8 KiB 0.94 -> 0.81).
  // Nor where the loops read a few page-long streams at once (2 to kMostStreams), which the hardware
  // follows: hf-dynamic -> vllm-flash-nhd (8, one per head) 1.07 -> 0.99, lmcache-2ltd -> vllm-packed-nhd
  // (K's and V's) 0.99 -> 0.85. Transposes and runs shorter than a line (into vllm-paged-legacy's 16-byte
  // K packs and token-fastest V) only where the call's CPU picks it: lmcache-2ltd 0.81 -> 0.72 on that
  // Xeon, but 0.99-1.46x as fast on a Zen 4, median 1.06-1.08x (kv_table_free_prefetches, emit/cpu.cpp).
  // Over a sweep with these rules (421 kernels changed, one run against the mean of two, scaled by the
  // unchanged pairs' drift): runs of 1 KiB or more a median 1.12x, 142 -> 2 of 160 under 0.8x memcpy at one
  // thread; shorter runs 1.10x, 156 -> 57 of 208. The few that lost 5-7% are SGLang's and llama.cpp's slot
  // pools read over their slots in 256-byte runs into targets holding a head's K and V together
  // (sglang0523-mha -> vllm-packed-nhd 0.97 -> 0.90), all still 0.85x or more.
  // A loop picking the source's tensor instance inside the strided one found (or where none is) is nearer
  // (next_instance_step).
  // Where the call's CPU picks the prefetch and the loop steps the source by a page or more (each iteration
  // its own pages: HF's heads 512 KiB apart, read 4 KiB a head into the legacy cache), the step is taken
  // kNearestPickedPrefetchBytes ahead. Measured on the Zen 4 (256 MiB, two processes of 5 interleaved
  // repetitions, 1 / 2 threads, the kernels against their own 8 KiB-ahead copies): hf-dynamic ->
  // vllm-paged-legacy 1.09-1.11x / 1.00-1.06x as fast (0.74x -> 0.81-0.82x of memcpy at one thread),
  // hf520-dynamic 1.01-1.04x / 1.09-1.10x, llamacpp-vtrans 1.00-1.01x / 0.99-1.01x; nearer iterations
  // (LMCache's heads 512 bytes apart, in the same rows) 0.92-1.10x either way, so those keep theirs.
  auto nearest = [&](int mode) {
    const bool own_pages = std::abs(cell.source.stride[static_cast<std::size_t>(mode)]) * source_bytes >= kPageBytes;
    return where_cpu_picks && own_pages ? kNearestPickedPrefetchBytes : kNearestPrefetchBytes;
  };
  const PrefetchStep strided = [&]() -> PrefetchStep {
    for (const bool one_iteration : {true, false})
      for (int level = static_cast<int>(cell.loops.size()) - 1; level > block; --level) {
        const std::int64_t bytes = bytes_per_iteration(cell, level, source_bytes);
        if (bytes > kFarthestPrefetchBytes) break;
        const int mode = cell.loops[static_cast<std::size_t>(level)];
        const std::int64_t iterations = (nearest(mode) + bytes - 1) / bytes;
        if (one_iteration && (iterations > 1 || block < 0)) continue;
        if (steps_source_by_stride(cell, mode) && 2 * iterations <= cell.modes[static_cast<std::size_t>(mode)].extent) return {level, iterations};
      }
    return {block, 1};
  }();
  PrefetchStep chosen = next_instance_step(cell, block, source_bytes);
  if (chosen.level <= strided.level) chosen = strided;
  chosen.where_cpu_picks = where_cpu_picks && chosen.level >= 0;
  // A step inside the block: the hopping streams' (the lookup's own level would be the block past them).
  chosen.on_page_hops = on_page_hops && chosen.level > block;
  if (on_page_hops && !chosen.on_page_hops) return {};
  return chosen;
}

std::string next_displacement(const Cell& cell, const PrefetchStep& step, const Inputs& in, const std::string& bound, const Carry& carry) {
  const std::string& outer_bound = carry.outer_bound;
  if (step.level < 0) return "";
  if (step.next_instance) return "INT64_C(0)";  // the same offset, in next_instance_pointer's instance
  const int mode = cell.loops[static_cast<std::size_t>(step.level)];
  const std::string& var = cell.modes[static_cast<std::size_t>(mode)].var;
  const std::string ahead = std::to_string(step.iterations);
  const int outer = step.level > 0 ? cell.loops[static_cast<std::size_t>(step.level - 1)] : -1;
  // The step level's table atoms with the step's variable at `at` (and the enclosing loop's at `outer_at`,
  // where given), less their values now.
  auto atoms_moved_to = [&](const std::string& at, const std::string& outer_at = "") {
    std::string sum;
    for (std::size_t i = 0; i < cell.source.atoms.size(); ++i) {
      const Atom& a = cell.source.atoms[i];
      if (reads_tile_mode(cell, a) || level_of(cell, a.modes) != step.level) continue;
      std::string next = expr::to_c(a.e, [&](const expr::Node& node, const std::string& entry) {
        if (node.op == expr::Op::Coord) {
          const int m = static_cast<int>(node.value);
          return m == mode ? at : m == outer && !outer_at.empty() ? outer_at : cell.modes[static_cast<std::size_t>(m)].var;
        }
        return "static_cast<int64_t>(" + in.src_tables + "[" + std::to_string(node.value) + "][" + entry + "])";
      });
      sum += (sum.empty() ? "" : " + ") + ("(" + next + " - " + atom_name(true, i) + ") * " + i64(a.coef));
    }
    return sum;
  };
  std::string sum = atoms_moved_to("(" + var + " + " + ahead + ")");
  const std::int64_t stride = cell.source.stride[static_cast<std::size_t>(mode)];
  if (stride != 0) sum += (sum.empty() ? "" : " + ") + i64(step.iterations * stride);
  if (sum.empty()) return "";
  // Past the loop's last iteration, the enclosing loop's next one (its first iteration of this loop),
  // where the caller names that loop's end: the next block a short lookup loop reads is otherwise left
  // unprefetched every time round. Two kinds of enclosing loop carry it:
  // - one that steps the source by a stride alone, where the caller asks (carry.by_stride: TensorRT-LLM's
  //   32-token blocks over the legacy cache's 16-token ones, every other box). Its table entries are those
  //   the loop's first iteration read (a guard only cuts a loop from above), so they lie within the tables;
  //   the enclosing loop's next iteration may lie past its bound, where only a prefetch goes astray.
  // - one read by the step level's own lookup alone (the outer digits of the token whose inner digits the
  //   step loop holds: vLLM 0.3.3's 16-token blocks read into TensorRT-LLM's 32-token ones, every other
  //   block unprefetched). The next block then lies where the table says, not where the hardware follows,
  //   so this carry is taken for runs of lines too. Its table entry is read only where the enclosing loop's
  //   next iteration holds a moved token (the guard below), as the loop itself would read it. Measured on
  //   an AMD EPYC of Zen 4 (a hand edit of vllm033-lhbnc -> trtllm-pool, 256-byte runs, 256 MiB, two
  //   processes of 9 interleaved repetitions, 1 / 2 threads): 0.75x -> 0.84x of memcpy, 1.11-1.12x /
  //   1.05-1.17x as fast. Where the caller asks (carry.by_lookup), under carry.lookup_choice, the CPU's to
  //   pick (cpu.cpp says which blocks).
  std::string carried = "INT64_C(0)";
  const bool first_iteration_read = cell.modes[static_cast<std::size_t>(mode)].weight > 0;  // its value at 0 is the coordinate's least
  const bool carries = !outer_bound.empty() && step.iterations == 1 && outer >= 0 && first_iteration_read;
  const std::string& outer_var = carries ? cell.modes[static_cast<std::size_t>(outer)].var : var;
  auto back_to_first = [&](std::string back) {  // `back` (atoms moved) plus both loops' strides
    if (stride != 0) back += (back.empty() ? "" : " + ") + ("-" + var + " * " + i64(stride));
    const std::int64_t outer_stride = cell.source.stride[static_cast<std::size_t>(outer)];
    if (outer_stride != 0) back += (back.empty() ? "" : " + ") + i64(outer_stride);
    return back;
  };
  if (carries && carry.by_stride && steps_source_by_stride(cell, outer)) {
    carried = "(" + outer_var + " + 1 < " + outer_bound + " ? " + back_to_first(atoms_moved_to("INT64_C(0)")) + " : INT64_C(0))";
  } else if (carries && carry.by_lookup && read_by_step_lookup_alone(cell, outer, step.level)) {
    std::string next_holds = (carry.lookup_choice.empty() ? "" : cpu_choice_load(carry.lookup_choice) + " && ") + outer_var + " + 1 < " + outer_bound;
    for (const auto& c : cell.coords) {
      const std::string least = least_value(cell, c, step.level - 1, "(" + outer_var + " + 1)");
      if (!least.empty() && level_reads_digit_of(cell, c, step.level))
        next_holds += " && " + least + " <= " + coordinate_limit(cell, static_cast<int>(&c - &cell.coords[0]), in);
    }
    carried = "(" + next_holds + " ? " + back_to_first(atoms_moved_to("INT64_C(0)", "(" + outer_var + " + 1)")) + " : INT64_C(0))";
  }
  // The step ahead's entries only where it moves something (as level_statements' guards): past the
  // coordinate's last value they may lie past the table's end (the token after a cache's last one).
  std::string within = var + " + " + ahead + " < " + bound;
  for (const auto& c : cell.coords) {
    const std::string partial = least_value(cell, c, step.level, "(" + var + " + " + ahead + ")");
    if (!partial.empty() && level_reads_digit_of(cell, c, step.level))
      within += " && " + partial + " <= " + coordinate_limit(cell, static_cast<int>(&c - &cell.coords[0]), in);
  }
  return within + " ? " + sum + " : " + carried;
}

std::string coordinate_base(const Cell& cell, int coord, int without) {
  return coordinate_value(cell, cell.coords[static_cast<std::size_t>(coord)], without);
}

std::string coordinate_limit(const Cell& cell, int coord, const Inputs& in) {
  const CellCoordinate& c = cell.coords[static_cast<std::size_t>(coord)];
  bool token = std::any_of(c.modes.begin(), c.modes.end(), [&](int m) { return cell.modes[static_cast<std::size_t>(m)].top_of_token; });
  return token ? "kv_min(" + i64(c.hi) + ", " + in.num_tokens + " - 1)" : i64(c.hi);
}

std::string final_offset(const Cell& cell, bool source) { return offset_at(cell, source, static_cast<int>(cell.loops.size()) - 1); }

std::string offset_at(const Cell&, bool source, int level) { return offset_name(source, level); }

std::string extent(const Cell& cell, int mode, const Inputs& in) {
  const Mode& m = cell.modes[static_cast<std::size_t>(mode)];
  if (!m.top_of_token) return i64(m.extent);
  const CellCoordinate& c = cell.coords[static_cast<std::size_t>(m.coord)];
  std::string end = "kv_min(" + i64(c.hi + 1) + ", " + in.num_tokens + ")";  // one past the last token moved
  if (c.modes.size() == 1 && m.weight == 1) return "kv_max(INT64_C(0), " + end + " - " + i64(c.lo) + ")";
  return "kv_max(INT64_C(0), kv_floordiv(" + end + " + " + i64(m.weight - 1) + ", " + i64(m.weight) + "))";
}

std::vector<std::string> level_statements(const Cell& cell, int level, const Inputs& in, const std::string& skip) {
  std::vector<std::string> out;
  if (level < 0)
    for (std::size_t m = 0; m < cell.modes.size(); ++m)
      if (level_of(cell, static_cast<int>(m)) < 0 && !in_tile(cell, static_cast<int>(m)) &&
          std::find(cell.run.begin(), cell.run.end(), static_cast<int>(m)) == cell.run.end())
        out.push_back("[[maybe_unused]] constexpr int64_t " + cell.modes[m].var + " = 0;");
  // Coordinates checked against their bound: the token against num_tokens, a partial top digit.
  for (const auto& c : cell.coords) {
    if (!c.guarded || level_of(cell, c.modes) != level) continue;
    if (&c - &cell.coords[0] == cell.tile_guard) continue;  // checked per tile by the printer
    out.push_back("if (" + coordinate_value(cell, c) + " > " + coordinate_limit(cell, static_cast<int>(&c - &cell.coords[0]), in) +
                  ") " + skip);
  }
  // A table read at this level whose entry takes some of a guarded coordinate's digits while others are
  // still to be bound: where the coordinate's last value ends inside this level's step (a cache's tokens
  // ending inside a 64-slot page laid over 16-slot blocks), the entries past it lie past the table's end.
  // The proof says nothing of them, so the step whose least value is already past the bound, which moves
  // nothing, is skipped before the read (found reading one entry past a block table under valgrind).
  if (level >= 0)
    for (const auto& c : cell.coords) {
      const std::string partial = least_value(cell, c, level, cell.modes[static_cast<std::size_t>(cell.loops[static_cast<std::size_t>(level)])].var);
      if (partial.empty() || !digits_left_below(cell, c, level) || !level_reads_digit_of(cell, c, level)) continue;
      out.push_back("if (" + partial + " > " + coordinate_limit(cell, static_cast<int>(&c - &cell.coords[0]), in) + ") " + skip);
    }
  // An inverted table's slot holds a position only where a moved token's entry holds it; checked before
  // the lookups that read the inverse. A slot along a tile axis is checked per row by the printer.
  for (const auto& c : cell.coords) {
    if (c.inverse < 0 || level_of(cell, c.modes) != level || std::any_of(c.modes.begin(), c.modes.end(), [&](int m) { return in_tile(cell, m); })) continue;
    out.push_back("if (" + slot_absent(cell, static_cast<int>(&c - &cell.coords[0]), in) + ") " + skip);
  }
  // Instance pointers, once the coordinate selecting the instance is known.
  for (bool source : {true, false})
    for (const auto& line : shifted_pointer(cell, level, in, source, 0, pointer_name(source))) out.push_back(line);
  // Table lookups and other non-affine terms, then the running offsets.
  for (bool source : {true, false})
    for (const auto& line : side_statements(cell, level, in, source)) out.push_back(line);
  return out;
}

std::vector<std::string> side_statements(const Cell& cell, int level, const Inputs& in, bool source) {
  std::vector<std::string> out;
  const SideForm& f = source ? cell.source : cell.target;
  const std::string& tables = source ? in.src_tables : in.dst_tables;
  std::string sum = level < 0 ? i64(f.constant) : offset_name(source, level - 1);
  if (level >= 0) {
    int m = cell.loops[static_cast<std::size_t>(level)];
    std::int64_t stride = f.stride[static_cast<std::size_t>(m)];
    if (stride != 0) sum += " + " + cell.modes[static_cast<std::size_t>(m)].var + " * " + i64(stride);
  }
  for (std::size_t i = 0; i < f.atoms.size(); ++i) {
    const Atom& a = f.atoms[i];
    if (reads_tile_mode(cell, a) || level_of(cell, a.modes) != level) continue;  // a gathered row's: row_offset
    out.push_back("const int64_t " + atom_name(source, i) + " = " + atom_value(cell, a, tables) + ";");
    sum += " + " + atom_name(source, i) + " * " + i64(a.coef);
  }
  out.push_back("const int64_t " + offset_name(source, level) + " = " + sum + ";");
  return out;
}

}  // namespace kvlayout::emit

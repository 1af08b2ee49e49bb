#pragma once
// The statements of a cell's loop nest that the CPU and CUDA printers share: at each loop level, what
// becomes known there (bound-checked coordinates, tensor-instance pointers, table lookups) and the
// running element offsets of both sides. Everything is computed at the outermost level where all it reads
// is bound, so lookups sit outside the loops that do not change them.
#include <cstdint>
#include <string>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// How the printed code names its inputs.
struct Inputs {
  std::string src;         // array of source instance pointers (char* const*)
  std::string dst;
  std::string src_tables;  // array of source table pointers (const int32_t* const*)
  std::string dst_tables;
  std::string num_tokens;
};

// Statements for `level` (-1: before the first loop); `skip` leaves the current iteration ("continue;",
// or "return;" before any loop).
std::vector<std::string> level_statements(const Cell& cell, int level, const Inputs& in, const std::string& skip);

// The element offset of a side once every loop is bound.
std::string final_offset(const Cell& cell, bool source);
// The element offset of a side as computed at loop `level` (-1: before the first loop).
std::string offset_at(const Cell& cell, bool source, int level);
// The source / target instance pointer variable.
std::string pointer_name(bool source);
// The statement defining a side's instance pointer, named `name`, with the instance index moved by
// `shift` (a member of a sibling group: sibling_cells.hpp), at the level where the coordinate selecting
// the instance is bound (-1: before the first loop); nothing at other levels.
std::vector<std::string> shifted_pointer(const Cell& cell, int level, const Inputs& in, bool source, std::int64_t shift, const std::string& name);
// The value of coordinate `coord` with mode `without` taken as 0, and the largest value the coordinate may
// take in this cell (the token's: num_tokens - 1), for checking a tile against the bound.
std::string coordinate_base(const Cell& cell, int coord, int without);
std::string coordinate_limit(const Cell& cell, int coord, const Inputs& in);
// The source displacement of the next iteration of the loop at `level` (prefetch_level's: the next block of
// a paged source, or the next step of a strided loop inside a large block): an expression, 0 at the loop's
// last iteration, or empty when the loop does not move the source. The printed code defines it as a
// variable named by next_displacement_name().
std::string next_displacement(const Cell& cell, int level, const Inputs& in, const std::string& bound);
std::string next_displacement_name();
// The element offset of one gathered row (Cell::tile_*_rows_gathered) of side `source`, once the tile mode
// that places it (the target-contiguous one for source rows, the source-contiguous one for target rows)
// is defined as a variable of its name: its lookups, then `const int64_t name = ...;`.
std::vector<std::string> row_offset(const Cell& cell, bool source, const Inputs& in, const std::string& name);
// True (as C) where the slot of an inverted table (coordinate `coord`, CellCoordinate::inverse) holds no
// moved token, once its modes are defined.
std::string slot_absent(const Cell& cell, int coord, const Inputs& in);
// How far ahead a copy prefetches its source: one iteration of the loop prefetch_level picks. The next
// block of a paged source is the natural distance (the hardware prefetcher does not follow a table), but a
// block read whole per iteration of several MiB (TensorRT-LLM's pool holds every layer's K and V of 32
// tokens in one 4 MiB block) leaves what was prefetched evicted before it is read: there a loop inside the
// block is taken, the innermost that reads at least kNearestPrefetchBytes an iteration. Measured on an
// Intel Xeon (2 MiB L2), 256 MiB, trtllm-pool -> dynamo-universal (4 KiB runs, 64 KiB apart in the
// source), one / two threads: the next 4 MiB block 0.63x / 1.07x of memcpy, the next run (4 KiB ahead)
// 0.82-0.89x / 1.30-1.36x, two runs (8 KiB) 0.83-0.84x / 1.38-1.43x.
constexpr std::int64_t kFarthestPrefetchBytes = std::int64_t{256} << 10;
constexpr std::int64_t kNearestPrefetchBytes = std::int64_t{8} << 10;
// The level of the loop whose next iteration the copies prefetch, or -1 for none: the innermost loop
// whose next iteration moves the source through a table lookup where an iteration of it reads at most
// kFarthestPrefetchBytes; else the innermost loop inside that one reading between kNearestPrefetchBytes
// and kFarthestPrefetchBytes an iteration whose steps move the source by a stride; else the lookup's.
int prefetch_level(const Cell& cell, int source_bytes);
// A loop's extent as an expression (the token's top digit depends on num_tokens).
std::string extent(const Cell& cell, int mode, const Inputs& in);

}  // namespace kvlayout::emit

#pragma once
// A pair's own access pattern, replayed: the runs a kernel actually copies (observed by running it on
// tagged bytes), copied again by a loop that does nothing else: no index arithmetic, no table reads, the
// next run's source prefetched, streaming stores. The kernel cannot expect to beat the better of the two
// orders a plain copy would take (the target's, writing sequentially; the source's, reading
// sequentially), so kernel time over replay time says how much of a pair's distance from memcpy is the
// kernel's and how much is where its bytes lie. Used by kvlayout_bench_sweep --roofline.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace kvlayout::bench {

// How the bare copies here (the replay, and the sweep's chunk patterns) prefetch: a span a fixed distance
// of bytes ahead, into the second-level cache, as the kernels do (emit/cpu.cpp's kv_prefetch). Measured
// on an Intel Xeon, 256 MiB, one thread, runs taken at random within 4 MiB: into L1 one run ahead, 256-byte
// runs 6.1 GiB/s; into L2 2 KiB ahead 7.0, 16 KiB ahead 7.8 (1-4 KiB runs gain 1.0-1.7 GiB/s from L2, 4 KiB
// runs nothing from the distance).
constexpr std::size_t kPrefetchAheadBytes = std::size_t{16} << 10;
inline void prefetch_span(const char* from, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; k += 64) __builtin_prefetch(from + k, 0, 1);
}

// Bytes [base, base + bytes) of one tensor instance, inside the arena.
struct Region {
  char* base = nullptr;
  std::size_t bytes = 0;
};

// One contiguous copy, in elements from the arena's base: 12 bytes, so the list the replay reads adds
// about 1/20 of the bytes moved at 256-byte bf16 runs (and less for longer runs), which only lowers the
// replay's bandwidth: the comparison stays on the kernel's side.
struct Run {
  std::uint32_t from = 0, to = 0, elements = 0;
};

// The runs `move` copies, in target order, coalesced wherever both sides continue.
// Each source element is tagged with its index from `arena` in digits of base 2^(8e) - 1 (e = element
// bytes, one digit per pass, ceil(4 / e) passes), every target byte is reset to 0xFF before each pass,
// and `move` (the kernel, on one thread) runs once per pass: an all-ones target element was not
// written, since no digit is all ones. Overwrites every source and target byte.
// @pre every region lies in [arena, arena + 2^32 * element_bytes) and is element-aligned from arena;
//      `move` copies elements unchanged (source and target element types equal).
// Runs of fewer than `min_elements` (after coalescing) are left out: the sweep keeps a mixed pair's runs
// cells and drops its transposed elements (each a run of one), which would cost 12 bytes of list apiece.
// @post the runs' source and target element ranges lie in the regions, each run min_elements long or more;
//       throws std::runtime_error if a target element is written in some passes and not others (a move
//       that is not a fixed function).
std::vector<Run> observe_runs(const std::function<void()>& move, const std::vector<Region>& source, const std::vector<Region>& target,
                              std::size_t element_bytes, const char* arena, std::size_t min_elements = 1);

// The same runs in source order. (Two runs that abut in both sides abut in target order too, so
// observe_runs has already joined them: nothing more to coalesce.)
std::vector<Run> in_source_order(std::vector<Run> runs);

// How a thread walks its share of the runs. One stream: run after run, the next runs prefetched
// kPrefetchAheadBytes ahead. Four streams: the share cut in four quarters by bytes, a run (at most a page
// of it) from each quarter in turn, nothing prefetched: how the kernels read whole blocks four at a time
// (kv_stream_copy4, quartered boxes), since one core reading one page after another waits at each page
// while four pages read at once keep it at memcpy's pace (measured: emit/source_box.hpp). The one-stream
// replay alone under-stated the ceiling of runs of a page or less: kernels reading four at once beat it
// (median kernel/replay 1.06x on the stop-32 roofline).
enum class Streams { One, Four };

// Copies every run on `threads` threads, each taking a contiguous share of the list by bytes.
// @post every run's bytes are copied once, whatever `streams`.
void replay(const std::vector<Run>& runs, char* arena, std::size_t element_bytes, int threads, Streams streams = Streams::One);

}  // namespace kvlayout::bench

#include "access_replay.hpp"

#include "parallel_parts.hpp"
#include "stream_copy.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace kvlayout::bench {

namespace {

constexpr std::uint32_t kUnwritten = 0xFFFFFFFFu;

// The digit scheme of observe_runs: digits of `width` bytes in base 2^(8 width) - 1, `passes` of them.
struct Digits {
  std::size_t width = 0;  // bytes of the element the digit fills: min(e, 4)
  std::uint64_t base = 0;
  int passes = 0;
  std::uint64_t capacity = 1;  // base^passes: tags must stay below it (and below kUnwritten)
};

Digits digits_for(std::size_t element_bytes) {
  Digits d;
  d.width = std::min<std::size_t>(element_bytes, 4);
  d.base = (std::uint64_t{1} << (8 * d.width)) - 1;
  d.passes = static_cast<int>((4 + d.width - 1) / d.width);
  for (int p = 0; p < d.passes; ++p) d.capacity *= d.base;
  d.capacity = std::min<std::uint64_t>(d.capacity, kUnwritten);
  return d;
}

std::uint64_t element_index(const char* at, const char* arena, std::size_t element_bytes) {
  return static_cast<std::uint64_t>(at - arena) / element_bytes;
}

// A digit in the first W bytes of an element (little-endian), W a compile-time width: a copy of a
// run-time width per element made tagging 256 MiB take seconds.
template <std::size_t W>
void put_digit(char* at, std::uint32_t digit) {
  std::memcpy(at, &digit, W);
}
template <std::size_t W>
std::uint32_t get_digit(const char* at) {
  std::uint32_t digit = 0;
  std::memcpy(&digit, at, W);
  return digit;
}

// Pass p's digit of every source element's tag, little-endian in its first `width` bytes, zeros after.
// The digit is counted up element by element (no division per element).
template <std::size_t W>
void tag_sources(const std::vector<Region>& source, const char* arena, std::size_t e, const Digits& d, int pass) {
  std::uint64_t scale = 1;
  for (int p = 0; p < pass; ++p) scale *= d.base;
  for (const Region& r : source) {
    const std::uint64_t first = element_index(r.base, arena, e);
    const std::size_t count = r.bytes / e;
    if (first + count > d.capacity) throw std::runtime_error("access replay: the arena is too large to tag its elements");
    if (e > W) std::memset(r.base, 0, count * e);
    auto digit = static_cast<std::uint32_t>(first / scale % d.base);
    std::uint64_t left = scale - first % scale;  // elements until the digit steps
    for (std::size_t i = 0; i < count; ++i) {
      put_digit<W>(r.base + i * e, digit);
      if (--left == 0) {
        left = scale;
        digit = digit + 1 == d.base ? 0 : digit + 1;
      }
    }
  }
}

// Adds pass p's digits read from the target to `tags` (one per target element, regions in order).
template <std::size_t W>
void read_targets(const std::vector<Region>& target, std::size_t e, const Digits& d, int pass, std::vector<std::uint32_t>& tags) {
  std::uint64_t scale = 1;
  for (int p = 0; p < pass; ++p) scale *= d.base;
  const auto all_ones = static_cast<std::uint32_t>(d.base);
  std::size_t j = 0;
  for (const Region& r : target)
    for (std::size_t i = 0; i < r.bytes / e; ++i, ++j) {
      const std::uint32_t digit = get_digit<W>(r.base + i * e);
      const bool written = digit != all_ones;
      if (pass == 0) {
        tags[j] = written ? digit : kUnwritten;
        continue;
      }
      if (written != (tags[j] != kUnwritten)) throw std::runtime_error("access replay: a target element was written in one pass and not another");
      if (written) tags[j] = static_cast<std::uint32_t>(tags[j] + digit * scale);
    }
}

// One pass at the digit width of the element size.
void tag_and_read(const std::function<void()>& move, const std::vector<Region>& source, const std::vector<Region>& target, std::size_t e,
                  const char* arena, const Digits& d, int pass, std::vector<std::uint32_t>& tags) {
  auto run = [&](auto width) {
    constexpr std::size_t W = decltype(width)::value;
    tag_sources<W>(source, arena, e, d, pass);
    for (const Region& r : target) std::memset(r.base, 0xFF, r.bytes);
    move();
    read_targets<W>(target, e, d, pass, tags);
  };
  switch (d.width) {
    case 1: return run(std::integral_constant<std::size_t, 1>{});
    case 2: return run(std::integral_constant<std::size_t, 2>{});
    case 3: return run(std::integral_constant<std::size_t, 3>{});
    default: return run(std::integral_constant<std::size_t, 4>{});
  }
}

}  // namespace

std::vector<Run> observe_runs(const std::function<void()>& move, const std::vector<Region>& source, const std::vector<Region>& target,
                              std::size_t element_bytes, const char* arena, std::size_t min_elements) {
  const Digits d = digits_for(element_bytes);
  std::size_t target_elements = 0;
  for (const Region& r : target) target_elements += r.bytes / element_bytes;
  std::vector<std::uint32_t> tags(target_elements, kUnwritten);
  for (int pass = 0; pass < d.passes; ++pass) tag_and_read(move, source, target, element_bytes, arena, d, pass, tags);
  std::vector<Run> runs;
  // The last run is open (it may still grow); once another starts it is closed, and dropped if short.
  auto close_last = [&] {
    if (!runs.empty() && runs.back().elements < min_elements) runs.pop_back();
  };
  std::size_t j = 0;
  for (const Region& r : target) {
    const auto first = static_cast<std::uint32_t>(element_index(r.base, arena, element_bytes));
    for (std::size_t i = 0; i < r.bytes / element_bytes; ++i, ++j) {
      if (tags[j] == kUnwritten) continue;
      const auto to = static_cast<std::uint32_t>(first + i);
      if (!runs.empty() && runs.back().from + runs.back().elements == tags[j] && runs.back().to + runs.back().elements == to) {
        ++runs.back().elements;
      } else {
        close_last();
        runs.push_back({tags[j], to, 1});
      }
    }
  }
  close_last();
  return runs;
}

std::vector<Run> in_source_order(std::vector<Run> runs) {
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.from < b.from; });
  return runs;
}

namespace {

// Runs [begin, end) one after another, the next runs' first 4 KiB prefetched (longer runs are sequential,
// and the hardware follows them) until kPrefetchAheadBytes of runs past the one being copied are on
// their way.
void copy_one_stream(const std::vector<Run>& runs, std::size_t begin, std::size_t end, char* arena, std::size_t e, bool avx2) {
  std::size_t prefetched = begin;
  std::uint64_t ahead = 0;  // bytes of the runs prefetched and not yet copied
  for (std::size_t i = begin; i < end; ++i) {
    for (; prefetched < end && (prefetched <= i || ahead < kPrefetchAheadBytes); ++prefetched) {
      const std::size_t n = std::size_t{runs[prefetched].elements} * e;
      prefetch_span(arena + std::size_t{runs[prefetched].from} * e, std::min<std::size_t>(n, 4096));
      ahead += n;
    }
    ahead -= std::size_t{runs[i].elements} * e;
    stream_copy(arena + std::size_t{runs[i].to} * e, arena + std::size_t{runs[i].from} * e, std::size_t{runs[i].elements} * e, avx2);
  }
}

// Runs [begin, end) cut in four quarters by bytes (`before` counts the elements before each run), a run
// or a page of one from each quarter in turn until all four are done.
void copy_four_streams(const std::vector<Run>& runs, const std::vector<std::uint64_t>& before, std::size_t begin, std::size_t end, char* arena,
                       std::size_t e, bool avx2) {
  struct Cursor {
    std::size_t run = 0, end = 0;
    std::size_t done = 0;  // bytes of runs[run] already copied
  };
  constexpr std::size_t kStreams = 4, kPage = 4096;
  std::array<Cursor, kStreams> cursors;
  const std::uint64_t first = before[begin], elements = before[end] - first;
  for (std::size_t q = 0; q <= kStreams; ++q) {
    const std::uint64_t share = first + elements * q / kStreams;
    const auto at = static_cast<std::size_t>(std::lower_bound(before.begin() + static_cast<std::ptrdiff_t>(begin), before.begin() + static_cast<std::ptrdiff_t>(end), share) - before.begin());
    if (q < kStreams) cursors[q].run = at;
    if (q > 0) cursors[q - 1].end = q == kStreams ? end : at;
  }
  for (bool any = true; any;) {
    any = false;
    for (Cursor& c : cursors) {
      if (c.run >= c.end) continue;
      any = true;
      const Run& r = runs[c.run];
      const std::size_t n = std::size_t{r.elements} * e, piece = std::min(n - c.done, kPage);
      stream_copy(arena + std::size_t{r.to} * e + c.done, arena + std::size_t{r.from} * e + c.done, piece, avx2);
      c.done += piece;
      if (c.done == n) ++c.run, c.done = 0;
    }
  }
}

}  // namespace

void replay(const std::vector<Run>& runs, char* arena, std::size_t element_bytes, int threads, Streams streams) {
  std::vector<std::uint64_t> before(runs.size() + 1, 0);  // elements before each run
  for (std::size_t i = 0; i < runs.size(); ++i) before[i + 1] = before[i] + runs[i].elements;
  const bool avx2 = __builtin_cpu_supports("avx2");
  auto part = [&](int p) {
    auto first_at = [&](int q) {
      const std::uint64_t share = before.back() * static_cast<std::uint64_t>(q) / static_cast<std::uint64_t>(threads);
      return static_cast<std::size_t>(std::lower_bound(before.begin(), before.end() - 1, share) - before.begin());
    };
    const std::size_t begin = first_at(p), end = p + 1 == threads ? runs.size() : first_at(p + 1);
    if (streams == Streams::Four) copy_four_streams(runs, before, begin, end, arena, element_bytes, avx2);
    else copy_one_stream(runs, begin, end, arena, element_bytes, avx2);
    _mm_sfence();
  };
  run_parts(threads, part);
}

}  // namespace kvlayout::bench

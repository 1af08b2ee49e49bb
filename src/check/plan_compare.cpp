#include "check/plan_compare.hpp"

#include <algorithm>

namespace kvlayout::check {
namespace {

// Disjoint target intervals, each with one source offset (src - dst): the plan's writes after duplicates
// that copy the same bytes are folded together.
struct Segment {
  std::int64_t start = 0, end = 0, delta = 0;
};

// Phase 1: fold the sorted records into segments; the first byte written from two different source bytes
// is ALIASED. Invariant: every record still active (end > the next start) contains that start, so all of
// them share one delta, and comparing with the delta of the covering segment suffices.
std::vector<Segment> fold(const std::vector<PlanRecord>& records, Comparison& out) {
  std::vector<Segment> segments;
  for (const PlanRecord& r : records) {
    const std::int64_t delta = r.src - r.dst, end = r.dst + r.len;
    out.written += r.len;  // an upper bound until the fold completes (then the union, below)
    if (!segments.empty() && r.dst < segments.back().end) {
      Segment& s = segments.back();
      if (delta != s.delta) {
        out.aliased = Comparison::Aliased{r.dst, r.dst + s.delta, r.src};
        return segments;
      }
      s.end = std::max(s.end, end);
      continue;
    }
    if (!segments.empty() && r.dst == segments.back().end && delta == segments.back().delta) {
      segments.back().end = end;
      continue;
    }
    segments.push_back({r.dst, end, delta});
  }
  return segments;
}

// Phase 2: every written byte against the expected run holding it (if any).
void writes_against_runs(const std::vector<Segment>& segments, const ExpectedMove& move, Comparison& out) {
  const auto& runs = move.runs;
  std::size_t e = 0;
  for (const Segment& s : segments) {
    out.written += s.end - s.start;
    while (e < runs.size() && runs[e].dst + runs[e].bytes <= s.start) ++e;
    std::int64_t x = s.start;
    while (x < s.end) {
      if (e == runs.size() || runs[e].dst > x) {
        if (!out.outside) out.outside = Comparison::Outside{x, x + s.delta};
        x = e == runs.size() ? s.end : std::min(s.end, runs[e].dst);
        continue;
      }
      const std::int64_t run_end = runs[e].dst + runs[e].bytes;
      if (runs[e].src - runs[e].dst != s.delta) {
        if (runs[e].slack && !out.outside) out.outside = Comparison::Outside{x, x + s.delta};
        if (!runs[e].slack && !out.wrong) out.wrong = Comparison::Wrong{x, x + s.delta, e};
      }
      x = std::min(s.end, run_end);
      if (x == run_end) ++e;
    }
  }
}

// Phase 3: every expected byte that no segment writes; counted by element.
void unwritten(const std::vector<Segment>& segments, const ExpectedMove& move, std::int64_t eb, int range_coordinate,
               Comparison& out) {
  std::size_t g = 0;
  std::vector<std::int64_t> values;  // the range coordinate of each uncovered piece
  for (std::size_t k = 0; k < move.runs.size(); ++k) {
    const ExpectedRun& r = move.runs[k];
    if (r.slack) continue;  // allowed, never required
    const std::int64_t end = r.dst + r.bytes;
    while (g < segments.size() && segments[g].end <= r.dst) ++g;
    std::int64_t x = r.dst;
    std::int64_t last_element = -1;  // counted already (two gaps in one element count once)
    std::size_t h = g;
    while (x < end) {
      std::int64_t gap_end = end;
      if (h < segments.size() && segments[h].start <= x) {  // written: skip the segment
        x = std::min(end, segments[h].end);
        if (x == segments[h].end) ++h;
        continue;
      }
      if (h < segments.size()) gap_end = std::min(end, segments[h].start);
      const std::int64_t first = (x - r.dst) / eb, last = (gap_end - 1 - r.dst) / eb;
      const std::int64_t from = std::max(first, last_element + 1);
      if (last >= from) out.uncovered += last - from + 1;
      last_element = last;
      if (!out.uncovered_sample) out.uncovered_sample = std::make_pair(k, first);
      if (range_coordinate >= 0) {
        // One value per loop iteration the piece touches (a merged run spans several iterations).
        const std::int64_t per = move.plan.cells[static_cast<std::size_t>(r.cell)].run_elements;
        for (std::int64_t el = first; el <= last; el = ((r.first_element + el) / per + 1) * per - r.first_element)
          values.push_back(coordinate_at(move, r, el, range_coordinate));
      }
      x = gap_end;
    }
  }
  std::sort(values.begin(), values.end());
  for (std::int64_t v : values) {
    if (!out.uncovered_ranges.empty() && v <= out.uncovered_ranges.back().second + 1) {
      out.uncovered_ranges.back().second = std::max(out.uncovered_ranges.back().second, v);
      continue;
    }
    out.uncovered_ranges.push_back({v, v});
  }
}

}  // namespace

Comparison compare(std::vector<PlanRecord>& records, const ExpectedMove& move, std::int64_t element_bytes,
                   int range_coordinate) {
  Comparison out;
  std::sort(records.begin(), records.end(), [](const PlanRecord& a, const PlanRecord& b) {
    return a.dst != b.dst ? a.dst < b.dst : a.src < b.src;
  });
  const std::vector<Segment> segments = fold(records, out);
  if (out.aliased) return out;
  out.written = 0;
  writes_against_runs(segments, move, out);
  unwritten(segments, move, element_bytes, range_coordinate, out);
  return out;
}

}  // namespace kvlayout::check

#pragma once
// A sweep's figures against an earlier sweep's (kvlayout_bench_sweep --against REF.json). On a shared
// machine memcpy and every kernel move together by as much as a change to the generator moves one kernel
// (two sweeps of one tree a day apart: memcpy 12% slower, the same kernels' ratios 3-7% lower), so a count
// of pairs under 0.8x compares two machine states as much as two generators. Pairs whose kernel code is
// the same in both (emit/code_key.hpp's digest) measure the drift; pairs whose code changed are read
// against it.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "spec/json_node.hpp"

namespace kvlayout::bench {

// The geometric mean of the ratios (this sweep's ratio to memcpy over the reference's) of some pairs.
struct DriftGroup {
  std::size_t pairs = 0;
  double geometric_mean = 1;  // 1 where there are no pairs
};

struct AgainstThreads {
  DriftGroup unchanged;  // same kernel code in both: the machine's drift
  DriftGroup changed;    // different kernel code
  DriftGroup unknown;    // the reference records no digest (a sweep from before digests)
  double drift = 1;                // unchanged's mean (1 where it is empty)
  double changed_over_drift = 1;   // changed's mean over the drift (1 where either group is empty)
  std::size_t below_0_8 = 0;       // this sweep's pairs under 0.8x of memcpy
  std::size_t below_0_8_at_reference_state = 0;  // those under 0.8x once divided by the drift
};

struct ChangedPair {
  std::string name;                       // "cache source -> target"
  std::map<int, double> over_drift;       // per thread count: ratio now over the reference's, over the drift
};

struct Against {
  std::map<int, AgainstThreads> threads;
  std::size_t new_pairs = 0;   // in this sweep, not in the reference
  std::vector<ChangedPair> changed;  // ordered by their one-thread figure, slowest first
};

// This sweep's pair rows (relayout_sweep.cpp's "pairs": cache, source, target, headline, kernel_digest,
// threads.N.ratio) against `reference`, a whole sweep JSON. Headline rows are left out, as from the
// summary. @throws std::runtime_error naming the JSON path where the reference is not a sweep's JSON.
Against compare_against(const spec::Json& rows, const spec::Json& reference);

spec::Json against_json(const Against& against);

}  // namespace kvlayout::bench

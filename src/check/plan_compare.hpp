#pragma once
// The comparison of a concrete plan with the expected move, by sweeping two sorted interval lists: the
// plan's copies (target line bytes -> source line bytes) and the expected runs. Linear after sorting; no
// byte is visited on its own.
#include <cstdint>
#include <optional>
#include <vector>

#include "check/expected_move.hpp"

namespace kvlayout::check {

// `len` bytes at target line byte dst receive source line bytes from src; `copy` names the plan entry.
struct PlanRecord {
  std::int64_t dst = 0;
  std::int64_t src = 0;
  std::int64_t len = 0;
  std::int64_t copy = 0;
};

struct Comparison {
  std::int64_t written = 0;  // target bytes the plan writes (the union)
  // ALIASED: the target byte `dst` receives source bytes src_a and src_b (different).
  struct Aliased {
    std::int64_t dst = 0, src_a = 0, src_b = 0;
  };
  std::optional<Aliased> aliased;
  // WRONG_MAPPING: target byte dst, inside expected run `run`, receives source byte src (not the expected one).
  struct Wrong {
    std::int64_t dst = 0, src = 0;
    std::size_t run = 0;
  };
  std::optional<Wrong> wrong;
  // A byte outside every expected run that the plan writes (an out-of-scope position, padding, or a
  // position SOURCE does not hold): FRAME_VIOLATION unless the caller finds it in scope.
  struct Outside {
    std::int64_t dst = 0, src = 0;
  };
  std::optional<Outside> outside;
  // UNCOVERED: expected elements with some byte never written.
  std::int64_t uncovered = 0;
  std::optional<std::pair<std::size_t, std::int64_t>> uncovered_sample;  // (run, element within it)
  std::vector<std::pair<std::int64_t, std::int64_t>> uncovered_ranges;   // of `range_coordinate`, merged
};

// @pre move.runs sorted by dst and disjoint. Sorts `records`. Stops at the first ALIASED (it outranks the
// rest); otherwise reports the first WRONG_MAPPING, the first outside write and the uncovered elements.
// `range_coordinate` (e.g. the token; -1 for none) is the coordinate whose uncovered values are listed.
Comparison compare(std::vector<PlanRecord>& records, const ExpectedMove& move, std::int64_t element_bytes,
                   int range_coordinate);

}  // namespace kvlayout::check

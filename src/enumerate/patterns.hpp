#pragma once
// Bit patterns for moving real bytes: a poison value no position ever carries (a NaN where the type has
// one), and per-position patterns drawn from the remaining "safe" values (never NaN, never the poison),
// so that after enough passes every position has been told apart from every other.
#include <cstdint>
#include <vector>

#include "spec/dtype.hpp"

namespace kvlayout::enumerate {

struct Patterns {
  std::uint32_t poison = 0;
  std::vector<std::uint32_t> safe;  // in increasing bit order

  // The pattern of position p in pass k: digit k of p in base |safe|.
  std::uint32_t of(std::int64_t p, int pass) const;
  // How many passes make every position's digits distinct.
  int passes(std::int64_t positions) const;
};

Patterns patterns_for(spec::DType type);

// A scale value per scale group (never 1, so a dropped or changed scale changes meaning).
double scale_value(std::int64_t group);

}  // namespace kvlayout::enumerate

#pragma once
// Random layout declarations for differential testing: pairs of layouts in the layout language (JSON,
// exactly what a user would write, so any case can be saved and replayed with the CLI), drawn from a seed.
// Each pair is either a self pair, two independent layouts over one content, or a layout and a small
// mutation of it (an extent off by one, a stride typo, a huge stride, a lost domain, a division by zero,
// a custom content with other extents, ...). Shapes are sized for the shipped `small` cache, so every
// case is enumerable.
#include <cstdint>
#include <string>
#include <vector>

#include "spec/json_node.hpp"

namespace kvlayout::test {

// splitmix64 (Steele, Lea, Flood 2014). Its stream depends only on the seed — std's distributions are
// implementation-defined — so a (seed, case) pair names the same layouts on every platform and run.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // @pre n > 0  @post 0 <= result < n
  std::int64_t below(std::int64_t n);
  // @pre lo <= hi  @post lo <= result <= hi
  std::int64_t between(std::int64_t lo, std::int64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(int percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<std::size_t>(below(static_cast<std::int64_t>(v.size())))]; }

 private:
  std::uint64_t state_;
};

struct RandomPair {
  spec::Json source;   // named "source": write it as source.json
  spec::Json target;   // named "target"
  std::string recipe;  // how the pair was made, e.g. "grid(x 3, y 4); mutation: stride typo (source <- target)"
};

// Case `index` of the stream `seed`; the same pair for the same two numbers, always.
RandomPair random_pair(std::uint64_t seed, std::uint64_t index);

}  // namespace kvlayout::test

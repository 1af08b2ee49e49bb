#pragma once
// Exact counting of domains. Domain predicates are almost always boolean combinations of comparisons of
// one coordinate with a constant ("kv == 0", "head >= 2 && head < 4"); their thresholds split the
// coordinate box into finitely many cells on which every predicate is constant. Counting positions is then
// a sum over cells, with no enumeration of positions.
#include <cstdint>
#include <functional>
#include <string>
#include <optional>
#include <vector>

#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"
#include "layout/interval.hpp"

namespace kvlayout::layout {

struct Cell {
  std::vector<Interval> ranges;  // one per coordinate
  std::int64_t volume = 0;
  std::vector<bool> truth;       // one per predicate
};

// @post cells partition the box [0, extents); nullopt when a predicate compares anything other than one
// coordinate with a constant (then counting falls back to "unknown").
std::optional<std::vector<Cell>> cells(const std::vector<std::int64_t>& extents,
                                       const std::vector<expr::Expr>& predicates);

// The layout's domain as one predicate: some view holds the position.
expr::Expr held_predicate(const BoundLayout& bound);

// |{x in box : held(x)}|, or nullopt (see cells).
std::optional<std::int64_t> domain_size(const BoundLayout& bound);

// A set of positions, counted and described by the coordinate values it spans where that is not the whole
// axis ("head 2..3 of 0..3").
struct PositionSet {
  std::int64_t count = 0;
  std::vector<std::string> spans;
};

// The positions of `bound`'s box whose predicate values `select` accepts; nullopt if not decomposable.
std::optional<PositionSet> describe_positions(const BoundLayout& bound, const std::vector<expr::Expr>& predicates,
                                              const std::function<bool(const std::vector<bool>&)>& select);

}  // namespace kvlayout::layout

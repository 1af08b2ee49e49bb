#pragma once
// A layout bound to a cache shape: every parameter resolved, every extent and stride a concrete integer,
// and the index and domain expressions left only over logical coordinates and table lookups.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "expr/expr.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::layout {

// Why a layout does not fit a cache shape (a failed requirement, a parameter the cache lacks).
struct Misfit {
  std::string what;
  std::string path;  // JSON path of the requirement, or empty
};

struct BoundTable {
  std::string name;
  std::int64_t length = 0;
  std::int64_t first = 0;  // entries lie in [first, end)
  std::int64_t end = 0;
};

struct BoundView {
  std::string name;
  std::string path;
  expr::Expr holds;  // truth value over coordinates (layout domain AND view domain); literal 1 = everywhere
  expr::Expr layout_holds;  // the layout's own domain alone (the first operand of holds), for naming a failure
  std::int64_t offset = 0;
  std::vector<std::int64_t> extents;
  std::vector<std::int64_t> strides;
  std::vector<expr::Expr> index;  // over coordinates and lookups
  std::vector<std::string> index_paths;
  std::vector<std::string> index_texts;
};

struct BoundTensor {
  std::string name;
  std::string path;
  int per = -1;                 // coordinate giving the instance, or -1 for a single instance
  std::int64_t per_first = 0;   // the per coordinate's value at instance 0 (per_range FIRST; 0 without one)
  std::int64_t instances = 1;   // instance = coord(per) - per_first, in [0, instances) where held
  std::int64_t size = 0;        // allocation of one instance, in elements
  std::vector<BoundView> views;
};

struct BoundLayout {
  std::shared_ptr<const spec::Layout> layout;
  spec::CacheShape cache;
  std::map<std::string, std::int64_t> values;  // cache-shape and layout parameters
  std::vector<std::string> coord_names;
  std::vector<std::int64_t> coord_extents;
  std::vector<BoundTable> tables;
  std::vector<BoundTensor> tensors;            // empty unless fits()
  std::vector<Misfit> misfits;

  bool fits() const { return misfits.empty(); }
  int coord_index(const std::string& name) const;  // -1 if absent
  std::int64_t element_bytes() const;
};

// Parameter overrides: a layout parameter (e.g. block_size) or cache-shape parameter (e.g. num_tokens).
using Overrides = std::map<std::string, std::int64_t>;

// @post result.fits() or result.misfits says why not (tensors then unbound).
// Throws SpecError for a declaration that cannot be bound at all: an expression that divides by zero or
// overflows, a zero or negative extent, an impossible table, an override naming no parameter.
BoundLayout bind(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& cache,
                 const Overrides& overrides = {});

}  // namespace kvlayout::layout

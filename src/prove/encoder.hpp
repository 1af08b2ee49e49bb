#pragma once
// A bound layout in Z3's integer theory. Coordinates are Int constants; floor division and modulo by
// constants are Z3's div/mod (Euclidean, equal to floor for a positive divisor); each table is an
// uninterpreted function with its injectivity stated by an inverse function, instantiated only on the
// lookups a query makes (quantified axioms time out in Z3 4.8.12). So a proof holds for every table.
#include <stdexcept>
#include <string>
#include <vector>
#include <z3++.h>

#include "expr/expr.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::prove {

// An expression the solver encoding cannot express (is_pow2 of a coordinate, which the loader rejects).
struct EncodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SymbolicPosition {
  std::string name;
  std::vector<z3::expr> coords;
};

class Encoder {
 public:
  // `prefix` keeps the two sides apart in constant and function names ("S", "T"). With `share_tables`,
  // table i reads the same uninterpreted function as `share_tables`'s table i (for comparing two layouts
  // under one block table). With `table_map` as well, table i reads `share_tables`'s table table_map[i]
  // instead (tables paired by name, as a refinement check pairs an assumed layout's tables with the real
  // one's); lookups still record this layout's own table index i.
  // @pre table_map (when given) has one index into share_tables's tables per table of `bound`.
  Encoder(z3::context& ctx, const layout::BoundLayout& bound, std::string prefix, const Encoder* share_tables = nullptr,
          const std::vector<int>* table_map = nullptr);
  // Tables are the concatenation of `concatenate`'s tables, in order (@pre as many as `bound` declares).
  Encoder(z3::context& ctx, const layout::BoundLayout& bound, std::string prefix,
          const std::vector<const Encoder*>& concatenate);

  const layout::BoundLayout& bound() const { return bound_; }
  z3::context& ctx() { return ctx_; }

  SymbolicPosition position(const std::string& name);
  z3::expr in_box(const SymbolicPosition& p);
  z3::expr value(const expr::Expr& e, const SymbolicPosition& p);
  z3::expr truth(const expr::Expr& e, const SymbolicPosition& p);
  // Where the concrete evaluator computes e without error: no divisor is 0 and every intermediate value
  // fits in int64, with && and || short-circuiting as the evaluator does. value() and truth() agree with
  // the evaluator exactly where defined() holds (elsewhere a division by 0 has an arbitrary value).
  z3::expr defined(const expr::Expr& e, const SymbolicPosition& p);
  // The evaluator reaches view (tensor, view)'s domain test at p: no earlier view holds p.
  z3::expr reaches_view(std::size_t tensor, std::size_t view, const SymbolicPosition& p);

  // The view stores p: it holds p and no earlier view (declaration order) does.
  z3::expr view_domain(std::size_t tensor, std::size_t view, const SymbolicPosition& p);
  // Some view holds p (p in the coordinate box is asserted separately).
  z3::expr held(const SymbolicPosition& p);
  z3::expr offset(std::size_t tensor, std::size_t view, const SymbolicPosition& p);
  // Every index of the view lies within its axis (where the evaluator gives p an element offset at all).
  z3::expr within_axes(std::size_t tensor, std::size_t view, const SymbolicPosition& p);
  // The tensor instance p is stored in: coord(per) - per_first (0 for a single instance). Not necessarily
  // within [0, instances): in-bounds proves that for every held position.
  z3::expr instance(std::size_t tensor, const SymbolicPosition& p);

  struct LookupTerm {
    int table;
    z3::expr entry;
    z3::expr value;
  };
  // Every lookup encoded so far.
  const std::vector<LookupTerm>& lookups() const { return lookups_; }
  // For every lookup encoded so far: an entry inside the table has a value in the table's range, and
  // inverse(value) == entry (so equal values imply equal entries: injectivity).
  z3::expr table_axioms();
  // The lookups whose entry is outside the table, as one disjunction (false when there are none).
  z3::expr entry_outside_table(std::size_t from_lookup = 0);

 private:
  z3::expr floor_div(const z3::expr& a, const expr::Expr& divisor, const SymbolicPosition& p);
  z3::expr constant(std::int64_t v) { return ctx_.int_val(static_cast<int64_t>(v)); }
  z3::expr in_int64(const z3::expr& v);

  z3::context& ctx_;
  const layout::BoundLayout& bound_;
  std::string prefix_;
  std::vector<z3::func_decl> tables_;
  std::vector<z3::func_decl> inverses_;
  std::vector<LookupTerm> lookups_;
};

}  // namespace kvlayout::prove

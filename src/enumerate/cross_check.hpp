#pragma once
// The exhaustive cross-check: an independent witness for the prover on a small cache. Every position is
// located under three block-table choices per side; collisions and coverage come from bitmaps; real bytes
// are moved S -> T and back T -> S with the destination poisoned first, and every destination element
// and every returned byte is compared. From what it observes the cross-check derives its own grade, by
// the same ordering rule as the prover, so the two can be compared row by row.
#include <memory>
#include <string>
#include <vector>

#include "enumerate/address_map.hpp"
#include "layout/bound_layout.hpp"
#include "prove/grade.hpp"
#include "prove/obligation.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::enumerate {

// A layout bound to the small cache, with its address map under each table choice (computed once,
// shared by every pair the layout takes part in).
struct Enumerated {
  std::shared_ptr<const spec::Layout> layout;
  std::shared_ptr<const layout::BoundLayout> bound;
  std::vector<layout::BlockTables> tables;
  std::vector<AddressMap> maps;  // empty when the layout does not fit the cache
};

// The most positions one layout may have on the cross-check shape: every position is located under three
// table choices and kept in memory, so the shape must be small (the shipped `small` has at most 42624).
inline constexpr std::int64_t kEnumerationLimit = std::int64_t{1} << 21;

// Throws SpecError when the layout has more than kEnumerationLimit positions on `small`.
Enumerated enumerate_layout(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& small);

struct CrossCheck {
  prove::Grade grade = prove::Grade::Unknown;
  prove::Reason reason = prove::Reason::SolverLimit;
  std::int64_t positions_checked = 0;      // positions located and compared, summed over table choices
  std::vector<prove::ObligationResult> findings;  // what was observed, as refuted obligations
};

// Throws enumerate::OracleError if the byte move contradicts the address maps (a bug in the oracle).
CrossCheck cross_check(const Enumerated& source, const Enumerated& target);

struct OracleError : std::logic_error {
  using std::logic_error::logic_error;
};

}  // namespace kvlayout::enumerate

#pragma once
// The exhaustive cross-check: an independent witness for the prover on a small cache shape. Every
// position is located under three block-table choices per side; collisions and coverage come from
// bitmaps; real bytes are moved S -> T and back T -> S with the destination poisoned first, and every
// destination element and every returned byte is compared. From what it observes the cross-check
// derives its own grade, by the same ordering rule as the prover, so the two can be compared row by row.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "enumerate/address_map.hpp"
#include "enumerate/limits.hpp"
#include "layout/bound_layout.hpp"
#include "verdict/grade.hpp"
#include "verdict/obligation.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::enumerate {

// A layout bound to the cross-check shape, with its address map under each table choice (computed once,
// shared by every pair the layout takes part in on that shape).
struct Enumerated {
  std::shared_ptr<const spec::Layout> layout;
  std::shared_ptr<const layout::BoundLayout> bound;
  std::vector<layout::BlockTables> tables;
  std::vector<AddressMap> maps;  // empty when the layout does not fit the shape or is too large
  std::string too_large;         // why a layout that fits was not enumerated (its storage), or empty

  bool enumerated() const { return bound->fits() && too_large.empty(); }
};

// Binds and enumerates. A layout over the storage limit of enumerate/limits.hpp is bound but not
// enumerated (too_large says why), so a valid layout never makes the cross-check allocate without bound.
// Throws SpecError for a declaration that cannot be bound (layout::bind), and for a shape on which the
// layout has more than kEnumerationLimit positions (a shape too large to enumerate: the caller's choice).
Enumerated enumerate_layout(std::shared_ptr<const spec::Layout> decl, const spec::CacheShape& shape,
                            const layout::Overrides& overrides = {});

struct CrossCheck {
  verdict::Grade grade = verdict::Grade::Unknown;
  verdict::Reason reason = verdict::Reason::SolverLimit;
  // Cross-checked: both sides fit the shape and were enumerated, so positions were compared. Otherwise
  // the grade (when a side does not fit) is read off the declarations alone and proves nothing about
  // the prover; `not_checked` says why, and nothing is counted.
  bool checked = false;
  std::string not_checked;
  std::int64_t positions_checked = 0;  // positions located and checked on both sides, summed over table
                                       // choices; 0 unless checked
  std::vector<verdict::ObligationResult> findings;  // what was observed, as refuted obligations
};

// @post result.checked == (source.enumerated() && target.enumerated()); when a side is too large the
// grade is UNKNOWN and there are no findings.
// Throws enumerate::OracleError if the byte move contradicts the address maps (a bug in the oracle).
CrossCheck cross_check(const Enumerated& source, const Enumerated& target);

struct OracleError : std::logic_error {
  using std::logic_error::logic_error;
};

}  // namespace kvlayout::enumerate

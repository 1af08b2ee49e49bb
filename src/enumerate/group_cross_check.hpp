#pragma once
// The group cross-check: an independent witness for prove::prove_group on a small cache shape, by
// enumeration (it depends on layout, enumerate and verdict only, never on the prover). What it observes:
//   per instance   every instance of both groups enumerated as the pair oracle enumerates one layout
//                  (fits; in bounds and injective under three table choices; padding on source instances);
//   covers         every position some target instance holds is held by some source instance;
//   carries        every position some source instance holds is held by some target instance;
//   bytes          real bytes moved under every table choice: each target instance's held positions read
//                  from a source instance that holds them (the lowest-numbered; replicas hold the same
//                  values), every destination element compared with what the move must leave there, then
//                  moved back to every source instance and compared byte by byte;
//   values         as the pair oracle: the round trip, a sweep of the element types, and the scales.
// Its grade comes from verdict::grade_of over those findings, the rule the prover grades by.
#include <string>
#include <vector>

#include "enumerate/cross_check.hpp"
#include "layout/rank_group.hpp"

namespace kvlayout::enumerate {

// A group with every member enumerated on one shape.
struct EnumeratedGroup {
  layout::Group group;
  std::vector<Enumerated> members;  // in the group's member order
};

// Binds every member on `shape` with `overrides` and enumerates it (as enumerate_layout does).
// Throws SpecError as enumerate_layout does.
EnumeratedGroup enumerate_group(const layout::Group& group, const spec::CacheShape& shape,
                                const layout::Overrides& overrides = {});

// @pre members[i] is group.members[i] enumerated on one shape, for both sides (the same shape).
// @post result.checked == every member of both groups enumerated; when a member is too large the grade is
// UNKNOWN and there are no findings; findings name their instance ("source rank 1: ...").
// Throws OracleError if the byte move contradicts the address maps (a bug in the oracle).
CrossCheck cross_check_group(const layout::Group& source, const std::vector<const Enumerated*>& source_members,
                             const layout::Group& target, const std::vector<const Enumerated*>& target_members);

CrossCheck cross_check_group(const EnumeratedGroup& source, const EnumeratedGroup& target);

// Both groups enumerated on `small` (expanded there by the caller, with the same `overrides`).
CrossCheck cross_check_group(const layout::Group& source, const layout::Group& target, const spec::CacheShape& small,
                             const layout::Overrides& overrides = {});

}  // namespace kvlayout::enumerate

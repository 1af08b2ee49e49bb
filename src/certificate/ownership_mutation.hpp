#pragma once
// Ownership mutants of a rank family: single edits of its ownership rule (the declaration's `holds`), the
// tensor index left alone, the mistakes a connector makes when it maps ranks to heads or layers:
//   modulo-owner      a parameter the rule reads (directly or through others) that divides, with its first
//                     `/` made `%`, inlined into holds (first_head = tp_rank % replicas * heads_per_rank:
//                     ranks mapped to heads by modulo instead of division);
//   owner-off-by-one  the range a coordinate is owned over shifted by one (both bounds + 1) or widened by
//                     one (the upper bound + 1).
// A mutant is judged by group moves on the cross-check shape (judge_ownership_mutant): the whole cache (the
// family with every size 1) to the family at each rank axis's size 2, then 8 (8 ranks on 4 KV heads
// replicate them), the original's move beside the mutant's, until a grade differs (killed); the group
// enumeration must agree with the group proof on every mutant move judged.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "certificate/controls.hpp"
#include "enumerate/group_cross_check.hpp"
#include "layout/rank_group.hpp"
#include "certificate/mutation.hpp"
#include "prove/options.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::certificate {

const std::vector<std::string>& ownership_mutation_kinds();

// Every ownership edit that applies to `family` (none when it has no `holds`, or is not a family).
std::vector<Mutant> ownership_mutants(const spec::Layout& family);

// The original family's moves, computed once and shared by its mutants.
struct OwnershipBaseline {
  std::shared_ptr<const spec::Layout> family;
  layout::Group whole;                       // the family with every size 1
  enumerate::EnumeratedGroup whole_enumerated;
  struct Move {
    std::map<std::string, std::int64_t> sizes;
    verdict::Grade grade;
    verdict::Reason reason;
  };
  std::vector<Move> moves;  // whole -> family at these sizes, each exact (the sizes where the family works)
};

// Throws SpecError when the family does not expand on `small`.
OwnershipBaseline ownership_baseline(const std::shared_ptr<const spec::Layout>& family, const spec::CacheShape& small,
                                     const prove::ProveOptions& options);

// Verdicts as controls.hpp's: killed | survived | invalid | disagree | unknown | not-cross-checked (no size
// at which the original's whole -> family move is exact on `small`: nothing to compare with).
MutantOutcome judge_ownership_mutant(const OwnershipBaseline& baseline, const Mutant& mutant, const spec::CacheShape& small,
                                     const prove::ProveOptions& options);
MutantOutcome judge_ownership_mutant(const std::shared_ptr<const spec::Layout>& family, const Mutant& mutant,
                                     const spec::CacheShape& small, const prove::ProveOptions& options);

}  // namespace kvlayout::certificate

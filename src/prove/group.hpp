#pragma once
// A group translation: a rank family (or a whole layout, a group of one) moved to another group, e.g.
// prefill TP 1 -> decode TP 2, TP 4 -> TP 2, replicated GQA heads, PP stages. Graded like a pair:
//   fits / defined / in-bounds / injective   per instance of both groups (padding per source instance);
//   covers(group)   every position some target instance holds is held by some source instance;
//   carries(group)  every position some source instance holds is held by some target instance;
//   the assignment  which source instance feeds which target instance, as boxes in (layer, head): each
//                   piece (source member -> target member restricted to its box) is proven like a pair
//                   (fits, covers, values), so the assignment itself is proven, not assumed.
// Replicas: the lowest-numbered source instance that holds a whole box feeds it (deterministic).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "layout/rank_group.hpp"
#include "prove/proof.hpp"

namespace kvlayout::prove {

struct RankRange {
  std::int64_t first = 0;
  std::int64_t end = 0;  // one past the last
};

struct RankAssignment {
  std::size_t target_member = 0, source_member = 0;  // indices into the groups' members
  std::optional<RankRange> heads;   // nullopt when the content has no `head` coordinate (MLA latents)
  std::optional<RankRange> layers;  // nullopt when the content has no `layer` coordinate
};

struct GroupProof {
  layout::Group source, target;
  // The group's grade, reason and unblocked_by; every obligation labelled with its instance in
  // Proof::instances (and its detail and counterexample summary); source_bound/target_bound are the first
  // members' (for naming coordinates: every instance of a family has the same tensors).
  Proof proof;
  std::vector<RankAssignment> assignment;           // sorted by (target member, source member, layers, heads)
  // Parallel to assignment: each piece proven as a pair (source member -> assigned_piece), what emit and
  // plan emit work from.
  std::vector<Proof> pieces;
};

// @pre source and target were expanded on `cache` with the same `overrides`.
// Throws SpecError for bad input, InternalError when a counterexample does not reproduce.
GroupProof prove_group(const layout::Group& source, const layout::Group& target, const spec::CacheShape& cache,
                       const ProveOptions& options = {}, const layout::Overrides& overrides = {});

// The target member's declaration restricted to the positions `a` assigns to its source member: what
// the kernel or plan for that rank pair moves. Named "target[tp_rank=1]<-[tp_rank=0]".
std::shared_ptr<const spec::Layout> assigned_piece(const layout::Group& source, const layout::Group& target,
                                                   const RankAssignment& a);

// "decode rank 1, heads 4..7 <- prefill rank 0, heads 4..7" style line (sides named by the caller).
std::string format_assignment(const GroupProof& g, const RankAssignment& a, const std::string& source_word = "source",
                              const std::string& target_word = "target");

}  // namespace kvlayout::prove

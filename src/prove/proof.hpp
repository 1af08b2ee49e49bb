#pragma once
// kvlayout's answer for one ordered pair on one cache shape: the grade, its reason, what would unblock
// it, and every obligation with its outcome.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"
#include "verdict/grade.hpp"
#include "verdict/grade_of.hpp"
#include "verdict/obligation.hpp"
#include "prove/options.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::prove {

struct Proof {
  std::shared_ptr<const spec::Layout> source_layout;
  std::shared_ptr<const spec::Layout> target_layout;
  std::shared_ptr<const layout::BoundLayout> source_bound;  // for naming coordinates and tensors in reports
  std::shared_ptr<const layout::BoundLayout> target_bound;
  spec::CacheShape cache;
  Grade grade = Grade::Unknown;
  Reason reason = Reason::SolverLimit;
  std::string unblocked_by;  // empty for exact grades
  std::vector<ObligationResult> preconditions;  // defined(source), defined(target): see obligation_registry.hpp
  std::vector<ObligationResult> obligations;
  // A group proof's (prove/group.hpp): the instance each obligation is about ("target rank 1", "target
  // rank 1 <- source rank 0", "group"), parallel to obligations; empty for a pair.
  std::vector<std::string> instances;
  std::vector<SkippedObligation> skipped;
  std::optional<std::int64_t> source_positions;
  std::optional<std::int64_t> target_positions;
  double ms = 0;
  int queries = 0;

  // The refuted or unknown obligation the grade comes from, if any.
  const ObligationResult* deciding() const;
};

// Binds both layouts to `cache` (SpecError for bad input) and runs the obligations in order.
// Throws InternalError when a counterexample does not reproduce.
Proof prove(std::shared_ptr<const spec::Layout> source, std::shared_ptr<const spec::Layout> target,
            const spec::CacheShape& cache, const ProveOptions& options = {}, const layout::Overrides& overrides = {});


}  // namespace kvlayout::prove

#pragma once
// The solver questions of a families plan, one per verdict, each answering with a re-checked witness or
// nothing. Order matters only for which defect is named first; each question is sound on its own given
// the ones before it (in-bounds first, so later questions may assume every member is defined).
#include <optional>
#include <string>

#include "check/family_plan.hpp"
#include "check/result.hpp"
#include "prove/session.hpp"

namespace kvlayout::check {

// What a question found: a verdict with its counterexample, or an unknown answer (why), or nothing.
struct Finding {
  std::optional<CheckResult> result;  // a refuting witness, re-checked
  std::string unknown;                // non-empty: the solver gave no answer somewhere
};

Finding find_out_of_bounds(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const FamilyPlan& plan);
// ALIASED: two member bytes write one target byte from different source bytes (family_aliasing.cpp).
Finding find_aliased(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                     const FamilyPlan& plan);
// Empty when every target byte is proved written at most once; otherwise why not: a same-source duplicate
// (harmless, not a verdict) or an unknown answer. Counting written bytes needs it empty.
std::string writes_once(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                        const FamilyPlan& plan);
Finding find_wrong_mapping(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const FamilyPlan& plan);
// Member bytes of held target positions outside the plan's scope (only asked when the plan has a scope).
Finding find_frame_held(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                        const FamilyPlan& plan);
// The target layout is in bounds and injective (what counting its bytes relies on); unknown or a finding.
Finding check_target_sound(prove::Session& s, const layout::BoundLayout& target);
// The counting argument (see family_coverage.cpp): UNCOVERED, FRAME_VIOLATION (padding) or UNKNOWN.
// `not_once` is writes_once()'s answer: when non-empty the count only refutes (W < N), and the rest is
// decided by concrete witnesses or UNKNOWN.
// @pre the four questions above found nothing and the target is sound.
Finding count_coverage(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                       const FamilyPlan& plan, const std::string& not_once, std::int64_t& written_bytes);

}  // namespace kvlayout::check

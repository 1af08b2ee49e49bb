#pragma once
// An exact shortcut for the aliasing question: when a family's target offset is affine in its variables
// and its block-table reads (each read taken as a free variable over the table's range: a superset of the
// members, so a proof over it holds for the real ones), mixed-radix stride separation proves the member
// bytes pairwise distinct without the solver, which struggles with such bounded Diophantine questions at
// production sizes (notes: Z3 4.8.12 Int timed out where an affine normaliser took microseconds).
#include "check/family_plan.hpp"

namespace kvlayout::check {

// True when no two distinct member bytes of f (or of f and g) write one target byte, by stride separation.
// False means "not shown" (ask the solver), never "aliased".
bool affine_distinct(const FamilyPlan& plan, const Family& f);
bool affine_distinct(const FamilyPlan& plan, const Family& f, const Family& g);

}  // namespace kvlayout::check

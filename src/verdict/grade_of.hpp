#pragma once
// The grade implied by obligation outcomes: shared by the prover and the cross-check, which derive their
// grades by one rule so that the two can be compared row by row.
#include <utility>
#include <vector>

#include "verdict/grade.hpp"
#include "verdict/obligation.hpp"
#include "verdict/reason.hpp"

namespace kvlayout::verdict {

// Worst finding wins; an unknown outcome makes the grade UNKNOWN unless something is already REFUSED,
// which no further answer could improve.
std::pair<Grade, Reason> grade_of(const std::vector<ObligationResult>& results);

}  // namespace kvlayout::verdict

#include "verdict/grade_of.hpp"

namespace kvlayout::verdict {

std::pair<Grade, Reason> grade_of(const std::vector<ObligationResult>& results) {
  Grade grade = Grade::ExactByte;
  Reason reason = Reason::Exact;
  bool unknown = false;
  for (const auto& r : results) {
    if (r.status == Status::Unknown) unknown = true;
    if (r.status != Status::Refuted) continue;
    Grade g = info(r.reason).grade;
    if (severity(g) > severity(grade)) {
      grade = g;
      reason = r.reason;
    }
  }
  if (unknown && grade != Grade::Refused) return {Grade::Unknown, Reason::SolverLimit};
  return {grade, reason};
}

}  // namespace kvlayout::verdict

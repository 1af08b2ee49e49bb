#include "verdict/obligation.hpp"

namespace kvlayout::verdict {

std::string status_name(Status s) {
  switch (s) {
    case Status::Proved: return "proved";
    case Status::Refuted: return "refuted";
    case Status::Unknown: return "unknown";
  }
  return "?";
}

std::string side_name(Side s) {
  switch (s) {
    case Side::Source: return "source";
    case Side::Target: return "target";
    case Side::Pair: return "pair";
  }
  return "?";
}

void set_solver_limit(ObligationResult& r, const std::string& solver_reason) {
  r.status = Status::Unknown;
  r.reason = Reason::SolverLimit;
  r.detail = "the solver gave no answer (" + solver_reason + ")";
}

}  // namespace kvlayout::verdict

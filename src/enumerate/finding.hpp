#pragma once
// A refuted obligation as the oracles (pair and group) report it: found by enumeration.
#include <string>

#include "verdict/obligation.hpp"

namespace kvlayout::enumerate {

inline verdict::ObligationResult finding(const std::string& name, verdict::Side side, verdict::Reason reason,
                                         std::string detail) {
  verdict::ObligationResult r;
  r.name = name;
  r.side = side;
  r.status = verdict::Status::Refuted;
  r.reason = reason;
  r.method = "enumeration";
  r.detail = std::move(detail);
  return r;
}

}  // namespace kvlayout::enumerate

#pragma once
// Verdicts of a check: is the translation a user wrote (an assumed layout, a declared geometry, a
// transfer plan) right? Grades answer "can an exact move exist?"; verdicts answer "is this move, the one
// you wrote, right?". Stable codes, printed as JSON `verdict` and listed in the README; one table.
#include <string>
#include <vector>

namespace kvlayout::check {

enum class Verdict {
  Ok,                // the checked translation is right
  WrongMapping,      // a destination element receives another logical position (P <- Q)
  Uncovered,         // positions in scope are never written
  Aliased,           // one destination byte is written twice, from different positions
  OutOfBounds,       // an address lies outside its tensor or registered region
  FrameViolation,    // bytes written outside the scope (other blocks, other requests, padding)
  ValueChange,       // element type or quantisation scale differs
  GeometryMismatch,  // the declaration disagrees with the real tensor
  Unknown,           // the solver gave no answer within its limits (never OK)
};

struct VerdictInfo {
  Verdict verdict;
  const char* code;     // "WRONG_MAPPING"
  const char* meaning;  // one line, for the README, --help and text reports
};

const std::vector<VerdictInfo>& verdict_table();
const VerdictInfo& info(Verdict v);
inline std::string code(Verdict v) { return info(v).code; }

// The CLI's exit code for a verdict: 0 OK, 3 Unknown, 1 any other (2 and 4 never come from a verdict).
int exit_code(Verdict v);

}  // namespace kvlayout::check

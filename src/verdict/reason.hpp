#pragma once
// Stable reason codes: one per way a pair can fall short of EXACT_BYTE, each with the grade it implies
// and a fixed one-line message (greppable, like Alive2's banners). Listed in the README.
#include <string>
#include <vector>

#include "verdict/grade.hpp"

namespace kvlayout::verdict {

enum class Reason {
  Exact,             // EXACT_BYTE
  Padding,           // EXACT_TOKEN: S has storage no position addresses
  DroppedPositions,  // SUBSET: S holds positions T does not
  LossyValues,       // NOT_EXACT: an element value does not survive S -> T -> S
  ScaleMismatch,     // NOT_EXACT: the quantisation scale is dropped or changed
  ContentMismatch,   // REFUSED: the layouts hold different content (MLA latent vs per-head K/V)
  DoesNotFit,        // REFUSED: a layout's requirement fails on the cache shape
  OutOfBounds,       // REFUSED: a declaration addresses past an extent, a table or its allocation
  Collision,         // REFUSED: a declaration stores two positions in one element
  MissingPositions,  // REFUSED: T holds positions S does not
  SolverLimit,       // UNKNOWN: the solver gave no answer within its limits
};

struct ReasonInfo {
  Reason reason;
  const char* code;
  Grade grade;
  const char* message;
};

const std::vector<ReasonInfo>& reason_table();
const ReasonInfo& info(Reason r);

}  // namespace kvlayout::verdict

// prove, its reports and the certificate name these types prove::Grade, prove::Reason, ...: the verdict
// vocabulary is what a proof speaks. The layer itself depends on nothing above layout.
namespace kvlayout::prove {
using namespace kvlayout::verdict;
}  // namespace kvlayout::prove

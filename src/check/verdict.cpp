#include "check/verdict.hpp"

#include <stdexcept>

namespace kvlayout::check {

const std::vector<VerdictInfo>& verdict_table() {
  static const std::vector<VerdictInfo> table = {
      {Verdict::Ok, "OK", "the translation is right: every checked byte lands where the destination reads it"},
      {Verdict::WrongMapping, "WRONG_MAPPING", "a destination element receives the bytes of another logical position"},
      {Verdict::Uncovered, "UNCOVERED", "positions in scope are never written"},
      {Verdict::Aliased, "ALIASED", "one destination byte is written twice, from different positions"},
      {Verdict::OutOfBounds, "OUT_OF_BOUNDS", "an address lies outside its tensor or registered region"},
      {Verdict::FrameViolation, "FRAME_VIOLATION", "bytes are written outside the scope (other blocks, other requests, padding)"},
      {Verdict::ValueChange, "VALUE_CHANGE", "the element type or the quantisation scale differs"},
      {Verdict::GeometryMismatch, "GEOMETRY_MISMATCH", "the declaration disagrees with the real tensor"},
      {Verdict::Unknown, "UNKNOWN", "the solver gave no answer within its limits (never counted as OK)"},
  };
  return table;
}

const VerdictInfo& info(Verdict v) {
  for (const auto& row : verdict_table())
    if (row.verdict == v) return row;
  throw std::logic_error("verdict without a row in verdict_table");
}

int exit_code(Verdict v) {
  switch (v) {
    case Verdict::Ok: return 0;
    case Verdict::Unknown: return 3;
    default: return 1;
  }
}

}  // namespace kvlayout::check

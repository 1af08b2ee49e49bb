#include "verdict/reason.hpp"

namespace kvlayout::verdict {

const std::vector<ReasonInfo>& reason_table() {
  static const std::vector<ReasonInfo> table = {
      {Reason::Exact, "exact", Grade::ExactByte, "every byte of the source returns after S -> T -> S"},
      {Reason::Padding, "padding", Grade::ExactToken,
       "every position survives S -> T -> S; the source has padding that no position addresses"},
      {Reason::DroppedPositions, "dropped-positions", Grade::Subset,
       "the target holds fewer positions than the source; those it holds arrive exactly"},
      {Reason::LossyValues, "lossy-values", Grade::NotExact,
       "an element value does not survive the conversion to the target's element type and back"},
      {Reason::ScaleMismatch, "scale-mismatch", Grade::NotExact,
       "the quantisation scale is dropped or changed, so stored values change meaning"},
      {Reason::ContentMismatch, "content-mismatch", Grade::Refused,
       "the layouts hold different content; no rearrangement turns one into the other"},
      {Reason::DoesNotFit, "does-not-fit", Grade::Refused, "a layout's requirement fails on this cache shape"},
      {Reason::OutOfBounds, "out-of-bounds", Grade::Refused,
       "a declaration addresses past an axis, a table or its allocation"},
      {Reason::Collision, "collision", Grade::Refused, "a declaration stores two logical positions in one element"},
      {Reason::MissingPositions, "missing-positions", Grade::Refused,
       "the target holds positions the source does not have"},
      {Reason::SolverLimit, "solver-limit", Grade::Unknown,
       "the solver gave no answer within its limits; nothing is proven"},
  };
  return table;
}

const ReasonInfo& info(Reason r) {
  for (const auto& i : reason_table())
    if (i.reason == r) return i;
  return reason_table().front();
}

}  // namespace kvlayout::verdict

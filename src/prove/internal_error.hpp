#pragma once
// A failure of kvlayout itself (e.g. a counterexample the concrete evaluator does not reproduce). It is
// reported as such, with exit code 4, and never turned into a grade.
#include <stdexcept>

namespace kvlayout::prove {

struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

}  // namespace kvlayout::prove

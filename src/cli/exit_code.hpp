#pragma once
// The CLI's exit codes: a contract scripts rely on.
namespace kvlayout::cli {

enum ExitCode : int {
  kOk = 0,          // the answer is yes (exact, held, listed)
  kNegative = 1,    // a well-formed question whose answer is no (not exact, not held, out of bounds)
  kBadInput = 2,    // a bad spec, cache shape, coordinate or flag; the message names where
  kUnknown = 3,     // the solver gave no answer within its limits
  kInternal = 4,    // a bug in kvlayout (never a grade)
};

}  // namespace kvlayout::cli

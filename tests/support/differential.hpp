#pragma once
// Differential testing: one pair of layouts graded three ways on the small cache — the prover with its
// normaliser, the prover with the solver alone (ProveOptions::normalise = false) and the exhaustive
// enumeration (enumerate::cross_check) — and a name for how the three answers relate. A proof and a
// cross-check agree by the campaign's own rule (certificate::Row::agree: same grade, same reason); the
// two provers must also settle every obligation alike (as tests/prove/normaliser_test.cpp requires);
// bad input must be rejected (SpecError) by all three or by none.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "verdict/grade.hpp"
#include "verdict/reason.hpp"
#include "spec/cache_shape.hpp"
#include "spec/json_node.hpp"
#include "support/random_layout.hpp"

namespace kvlayout::test {

// What one path answered. Crash and Timeout are seen only when the path ran in a child process.
enum class AnswerKind { Grade, BadInput, InternalError, Exception, Crash, Timeout };

struct Answer {
  AnswerKind kind = AnswerKind::Exception;
  prove::Grade grade = prove::Grade::Unknown;  // AnswerKind::Grade only
  prove::Reason reason = prove::Reason::SolverLimit;
  std::string detail;  // the deciding finding, or the error's message
  std::vector<std::pair<std::string, std::string>> obligations;  // provers: ("in-bounds(source)", "proved"), in order
  double ms = 0;  // wall-clock time of the path, child process included

  // "REFUSED [collision]", "bad input", "internal error", "exception std::bad_alloc", "crash (signal 11)".
  std::string brief() const;
  spec::Json to_json() const;
  static Answer from_json(const spec::Json& j);
};

// How the three answers relate, worst first.
//   false-exact     a prover says EXACT_*, the enumeration refutes it (a non-exact grade or bad input)
//   crash, timeout  a path died on a signal, or ran past the time limit
//   internal-error  prove::InternalError or enumerate::OracleError
//   exception       any other exception escaped (std::bad_alloc, std::logic_error, z3::exception, ...)
//   bad-input       some paths rejected the declarations as bad input (SpecError), others graded them
//   grade           a prover's grade or reason differs from the enumeration's
//                   (or, where the enumeration could not judge, from the other prover's)
//   obligations     the two provers reach the same grade but settle some obligation differently
//   not-cross-checked  a layout is too large to enumerate (enumerate/limits.hpp); the provers agree
//   unknown         a prover answered UNKNOWN (a solver limit); every definite answer agrees
//   agree           all three graded alike, or all three rejected the input
// Only the last three pass.
enum class Outcome { FalseExact, Crash, Timeout, InternalError, Exception, BadInput, Grade, Obligations, NotChecked, Unknown, Agree };

std::string outcome_name(Outcome o);
Outcome classify(const Answer& normalised, const Answer& solver, const Answer& enumeration);

struct Verdict {
  Answer normalised, solver, enumeration;
  Outcome outcome = Outcome::Agree;
  double ms = 0;

  bool passed() const { return outcome >= Outcome::NotChecked; }
  // The outcome and the three brief answers: cases with one key fail for one reason.
  std::string key() const;
  spec::Json to_json() const;
  static Verdict from_json(const spec::Json& j);
};

struct DifferentialOptions {
  std::int64_t limit_ms = 1000;  // per solver query; a limit reached is UNKNOWN
  // Each path in a child process (fork), so a crash or a hang is an answer instead of the end of the run.
  bool isolate = true;
  int timeout_s = 60;  // per path, when isolated
};

// Writes the pair as source.json and target.json in a scratch directory and grades it three ways.
Verdict grade_three_ways(const RandomPair& pair, const spec::CacheShape& small, const DifferentialOptions& options = {});

// Both declarations (one line of JSON each, ready for source.json / target.json), the recipe and the
// three answers, for a failure message.
std::string describe(const RandomPair& pair, const Verdict& verdict);

}  // namespace kvlayout::test

#pragma once
// One named question about a translation, with its outcome. The obligations, in order:
// fits -> defined (S, T) -> in-bounds (S, T) -> injective (S, T) -> covers -> carries -> values -> padding.
#include <optional>
#include <string>

#include "verdict/counterexample.hpp"
#include "verdict/reason.hpp"

namespace kvlayout::verdict {

enum class Status { Proved, Refuted, Unknown };
enum class Side { Source, Target, Pair };

std::string status_name(Status s);  // "proved", "refuted", "unknown"
std::string side_name(Side s);      // "source", "target", "pair"

struct ObligationResult {
  std::string name;
  Side side = Side::Pair;
  Status status = Status::Proved;
  double ms = 0;
  std::string method;  // how it was decided: "z3", "interval analysis", "exhaustive", ...
  std::string detail;  // one line: what was proven or found
  Reason reason = Reason::Exact;  // when refuted or unknown
  std::optional<Counterexample> counterexample;
};

// Marks r unknown for a solver limit, with the solver's own reason for that answer.
void set_solver_limit(ObligationResult& r, const std::string& solver_reason);

// An obligation that could not run because an earlier one failed (e.g. padding after a collision).
struct SkippedObligation {
  std::string name;
  Side side = Side::Pair;
  std::string because;
};

}  // namespace kvlayout::verdict

// prove, its reports and the certificate name these types prove::Grade, prove::Reason, ...: the verdict
// vocabulary is what a proof speaks. The layer itself depends on nothing above layout.
namespace kvlayout::prove {
using namespace kvlayout::verdict;
}  // namespace kvlayout::prove

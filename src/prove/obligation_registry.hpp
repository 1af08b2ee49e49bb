#pragma once
// The obligation registry: one row per obligation, in the order a proof runs them, like reason_table.
// prove() runs the rows; the controls switch each off against its known-bad pair; `kvlayout prove --help`
// lists them; the tests iterate them. Adding an obligation is one row here and one check function.
#include <functional>
#include <string>
#include <vector>

#include "verdict/obligation.hpp"
#include "prove/pair.hpp"
#include "prove/session.hpp"

namespace kvlayout::prove {

// The results so far, for a check that reads an earlier one (injective splits when in-bounds is proved).
class Results {
 public:
  explicit Results(const std::vector<ObligationResult>& results) : results_(results) {}
  bool proved(const std::string& name, Side side) const;
  bool refuted(const std::string& name, Side side) const;

 private:
  const std::vector<ObligationResult>& results_;
};

// Another obligation, on the row's own side (`same_side`) or on a fixed side.
struct ObligationRef {
  std::string name;
  Side side = Side::Pair;
  bool same_side = false;
  Side on(Side row_side) const { return same_side ? row_side : side; }
};

using CheckFunction = std::function<ObligationResult(Session&, const Pair&, Side, const Results&)>;

struct ObligationRow {
  std::string name;
  std::vector<Side> sides;            // run once per side, in this order
  std::vector<ObligationRef> needs;   // must all be proved, else the row is skipped (listed under `skipped`)
  std::vector<ObligationRef> uses;    // read by the check when proved (a hint, not a prerequisite)
  std::vector<Reason> refuted_as;     // the reasons a refutation can carry
  bool per_layout = false;            // a fact of one side alone: cached per (layout, cache shape)
  // A precondition of the proof rather than a question about the move (defined): reported under
  // Proof::preconditions and the JSON's "preconditions", so that "obligations" keeps the order the prove
  // contract names (fits, in-bounds, injective, covers, carries, values, padding). Its unknown outcome
  // still makes the grade UNKNOWN.
  bool precondition = false;
  std::string question;               // one line, for help text and reports
  std::string control_source, control_target;  // a known-bad pair that only this obligation refuses
  CheckFunction check;
};

// Every obligation, in proof order.
const std::vector<ObligationRow>& obligation_registry();
// The row named `name`; throws std::logic_error for an unknown name.
const ObligationRow& obligation(const std::string& name);

}  // namespace kvlayout::prove

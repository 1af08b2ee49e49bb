#pragma once
// Controls that must fail, so that a green result means something:
//  - mutants of every engine declaration: each differing mutant must be told apart from its original
//    (graded non-exact, or its address function refuted equal); equivalent mutants must be proven equal;
//    and the enumeration must agree with the prover on every mutant pair; ownership mutants of every rank
//    family (ownership_mutation.hpp), judged by group moves, killed by a grade the original's move lacks;
//  - the broken declarations are refused for their expected reasons;
//  - the checker checks itself: each obligation switched off lets its known-bad pair through;
//  - the fictional engine is graded like any other (a grade is about a declaration, not a vendor).
#include <map>
#include <string>
#include <vector>

#include "certificate/matrix.hpp"

namespace kvlayout::certificate {

struct MutantOutcome {
  std::string original, name, kind, description;
  // killed | equivalent | survived | invalid | disagree | unknown | not-cross-checked (too large to
  // enumerate on the cross-check shape: reported, not judged)
  std::string verdict;
  std::string grade;           // original -> mutant on the cross-check shape
  std::string reason;
  std::string caught_by;       // "grade" or "address function" when killed
  std::string detail;
};

struct BrokenControl {
  std::string layout, expected, cache;
  std::string forward, backward;  // reason codes of vllm-flash-nhd -> layout and layout -> vllm-flash-nhd
  bool ok = false;
};

struct SelfCheck {
  std::string obligation, source, target, cache;
  std::string grade_on, grade_off;
  bool ok = false;  // off is strictly better than on: this obligation is what catches the pair
};

struct Controls {
  std::vector<MutantOutcome> mutants;
  std::map<std::string, std::size_t> verdicts;  // per verdict
  std::size_t killed_by_grade = 0;
  double mutation_score = 0;  // killed / (killed + survived)
  std::vector<BrokenControl> broken;
  std::vector<SelfCheck> self_checks;
  std::map<std::string, std::size_t> fictional_grades;  // rows involving the fictional engine
  std::string fictional_statement;

  bool ok() const;  // no disagreement or unknown, every broken and self check as required
};

Controls run_controls(const spec::Catalog& catalog, const Matrix& matrix, const MatrixOptions& options);

}  // namespace kvlayout::certificate

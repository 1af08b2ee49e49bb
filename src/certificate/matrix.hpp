#pragma once
// The campaign: every ordered pair of declared layouts (self pairs included) graded on a production cache
// shape, and cross-checked by enumeration on a small one against a proof on that same small shape: the
// matrix's cross-check shape, or one derived for the pair when a layout does not fit it. A row that cannot
// be enumerated on any is reported as not cross-checked, with the reason, and counted. A row with a rank
// family on either side (a declaration with "ranks") is graded as a group translation at the families'
// default sizes (prove::prove_group) and cross-checked by the group oracle (enumerate/group_cross_check.hpp).
// Beside the grid, the group-row table (group_rows.hpp): families moved between sizes on real models.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "certificate/group_rows.hpp"
#include "enumerate/cross_check.hpp"
#include "prove/options.hpp"
#include "verdict/reason.hpp"
#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"

namespace kvlayout::certificate {

struct MatrixOptions {
  std::optional<std::string> cache;           // proofs on this shape for every row
  std::string kv_cache = "llama-3.1-70b";     // otherwise: per-head layouts here,
  std::string mla_cache = "deepseek-v3";      // MLA layouts and mixed pairs here
  std::string cross_check_cache = "small";
  int jobs = 1;
  bool group_rows = true;                     // decide the group-row table too (group_rows.hpp)
  // Derive only every sample-th grid row, group row and control mutant (1: all). A sample is for replaying
  // part of a certificate where a whole replay costs too much (under the sanitizers); it decides no count,
  // no equivalence class and no headline, so it never writes a certificate.
  std::size_t sample = 1;
  prove::ProveOptions prove;
  // Called as work items finish, with the phase ("matrix rows", "controls: mutants", ...), from any thread.
  std::function<void(const std::string& phase, std::size_t done, std::size_t total)> progress;
  // Test-only: replaces the prover's grade on the cross-check shape for a pair, to plant a disagreement.
  std::function<std::optional<prove::Grade>(const std::string& source, const std::string& target)> small_grade_override;
};

// Whether the index-th item of a list (group row, control mutant) is in a sample of one in `sample`: every
// sample-th, from the first.
inline bool in_sample(std::size_t index, std::size_t sample) { return sample <= 1 || index % sample == 0; }
// Whether the grid row from layout `source` to layout `target` (indices) is in such a sample: one in `sample`
// along each anti-diagonal, so that every layout is sampled as a source and as a target (every sample-th row
// in source-major order would keep only the targets at multiples of `sample` when it divides the count).
inline bool in_sample_pair(std::size_t source, std::size_t target, std::size_t sample) {
  return in_sample(source + target, sample);
}

struct Row {
  std::string source, target, cache;
  bool group = false;  // a side is a rank family: graded as a group translation at its default sizes
  prove::Grade grade = prove::Grade::Unknown;
  prove::Reason reason = prove::Reason::SolverLimit;
  std::string unblocked_by;
  double prove_ms = 0;
  spec::Json counterexample;  // the deciding obligation's, or null when exact
  // The shape the row is cross-checked on: the matrix's cross-check shape, or one derived for the pair
  // when a layout does not fit it (see cross_check_plan.hpp); the matrix's shape when there is none.
  std::string cross_check_cache;
  prove::Grade small_grade = prove::Grade::Unknown;  // the prover on cross_check_cache
  prove::Reason small_reason = prove::Reason::SolverLimit;
  enumerate::CrossCheck cross;  // cross.checked false: not cross-checked, cross.not_checked says why
  std::string error;  // an internal error while deciding this row (never a grade)
  bool derived = true;  // false: left out of a sample (MatrixOptions::sample), nothing decided

  bool cross_checked() const { return error.empty() && cross.checked; }
  bool not_cross_checked() const { return error.empty() && !cross.checked; }
  // A row not cross-checked has nothing to disagree with; it is counted on its own, never as agreeing.
  bool agree() const {
    return error.empty() && (!cross.checked || (cross.grade == small_grade && cross.reason == small_reason));
  }
};

struct Matrix {
  std::vector<std::shared_ptr<const spec::Layout>> layouts;  // engines by name, then controls by name
  std::map<std::string, spec::CacheShape> caches;            // every shape used (derived ones too), by name
  std::string cross_check_cache;                             // the matrix's (enumerable) cross-check shape
  std::vector<Row> rows;                                     // source-major in layout order
  std::vector<std::vector<std::string>> classes;             // layouts with one address function
  std::vector<GroupRow> group_rows;                          // the group-row table's rows (when run)
  bool group_rows_run = false;
  double ms = 0;

  const Row& at(std::size_t source, std::size_t target) const { return rows[source * layouts.size() + target]; }
  std::size_t disagreements() const;
  std::size_t unknowns() const;
  std::size_t errors() const;
  std::size_t not_cross_checked() const;
  std::map<std::string, std::size_t> cross_checked_on() const;  // rows cross-checked, per shape
  // Over the grid and the group rows together: what decides the exit code.
  bool all_agree() const { return disagreements() == 0 && errors() == 0 && count_group_rows(group_rows).disagree == 0 &&
                                  count_group_rows(group_rows).errors == 0; }
  bool any_unknown() const { return unknowns() > 0 || count_group_rows(group_rows).unknown > 0; }
};

// The proof shape for a pair under `options` (per content unless --cache).
std::string proof_cache(const spec::Layout& source, const spec::Layout& target, const MatrixOptions& options);

// Throws SpecError for bad input (a malformed spec, an unknown cache shape). A failure of kvlayout
// itself while deciding a row (prove::InternalError, enumerate::OracleError, any std::logic_error, memory
// exhausted) is that row's `error`, never an exception out of here.
Matrix run_matrix(const spec::Catalog& catalog, const MatrixOptions& options);

}  // namespace kvlayout::certificate

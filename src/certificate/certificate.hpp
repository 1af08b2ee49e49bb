#pragma once
// The certificate: what the campaign found, in a JSON file anyone can replay (`kvlayout certificate
// check`). Field names are a contract: top level tool, commit, caches (with cross_check_derived, the
// shapes derived for pairs that do not fit the cross-check shape), spec_hashes ({spec path: sha256}),
// counts (with cross_checked_on {shape: rows} and not_cross_checked), equivalence_classes, rows, controls
// (with mutation_score); each row source, target, grade, reason, unblocked_by, prove_ms,
// positions_checked (0 unless cross-checked), counterexample, cross_check (cache, checked,
// not_cross_checked, grade, reason, prover_grade, prover_reason, agree), each row also `group` (true when a
// side is a rank family, graded as a group); group_rows_table (whether the group-row table ran), group_rows
// (each source, source_params, target, target_params, cache, grade, reason, unblocked_by, assignment,
// prove_ms, positions_checked, counterexample, cross_check, error) and counts.group_rows.
#include <string>
#include <vector>

#include "certificate/controls.hpp"
#include "certificate/matrix.hpp"

namespace kvlayout::certificate {

// A row's cross-check: the shape it ran on, and either its grade beside the prover's there, or why the
// row was not cross-checked (then grade, reason and agree are null: nothing was compared).
spec::Json cross_check_json(const Row& row);
// The same for any row: `error_free` false when the row hit an error (then nothing was cross-checked).
spec::Json cross_check_json(const std::string& cache, const enumerate::CrossCheck& cross, prove::Grade prover_grade,
                            prove::Reason prover_reason, bool error_free);

spec::Json certificate_json(const spec::Catalog& catalog, const Matrix& matrix, const Controls& controls,
                            const MatrixOptions& options);

// The options a certificate was made with (its caches), for re-deriving it.
MatrixOptions options_from_certificate(const spec::Json& certificate, const std::string& file);

// Differences that matter between a recorded certificate and a fresh one (timings, the commit and
// counterexample details aside); empty when the recorded one is up to date. `sampled`: fresh re-derived only a
// sample (MatrixOptions::sample): its items are compared, the whole-grid facts and absent items are not.
std::vector<std::string> compare_certificates(const spec::Json& recorded, const spec::Json& fresh, bool sampled = false);

// "900 ordered pairs of 30 declared layouts ...; every row cross-checked by enumeration (841 on small, 59 on
// small[head_size=128]), 0 not cross-checked ..." — one line for humans (README, terminal).
std::string headline(const spec::Json& certificate);

}  // namespace kvlayout::certificate

#pragma once
// The certificate: what the campaign found, in a JSON file anyone can replay (`kvlayout certificate
// check`). Field names are a contract: top level tool, commit, caches, spec_hashes ({spec path: sha256}),
// counts, equivalence_classes, rows, controls (with mutation_score); each row source, target, grade,
// reason, unblocked_by, prove_ms, positions_checked, counterexample.
#include <string>
#include <vector>

#include "certificate/controls.hpp"
#include "certificate/matrix.hpp"

namespace kvlayout::certificate {

spec::Json certificate_json(const spec::Catalog& catalog, const Matrix& matrix, const Controls& controls,
                            const MatrixOptions& options);

// The options a certificate was made with (its caches), for re-deriving it.
MatrixOptions options_from_certificate(const spec::Json& certificate, const std::string& file);

// Differences that matter between a recorded certificate and a fresh one (timings, the commit and
// counterexample details aside); empty when the recorded one is up to date.
std::vector<std::string> compare_certificates(const spec::Json& recorded, const spec::Json& fresh);

// "900 rows, 28 classes: ..." — one line for humans (README, terminal).
std::string headline(const spec::Json& certificate);

}  // namespace kvlayout::certificate

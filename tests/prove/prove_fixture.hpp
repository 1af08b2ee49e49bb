#pragma once
// Proving shipped layouts by name, and re-checking every counterexample a proof shows with the concrete
// evaluator (independently of the prover's own re-check).
#include <string>

#include "prove/proof.hpp"

namespace kvlayout::test {

prove::Proof prove_named(const std::string& source, const std::string& target, const std::string& cache,
                         const prove::ProveOptions& options = {});
const prove::ObligationResult* find_obligation(const prove::Proof& p, const std::string& name, prove::Side side);
// Locates every position of every counterexample again, with the tables the counterexample lists, and
// checks each location shown is what the evaluator gives.
void recheck_counterexamples(const prove::Proof& p);

}  // namespace kvlayout::test

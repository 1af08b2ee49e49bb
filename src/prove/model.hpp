#pragma once
// From a satisfying Z3 model back to concrete values: coordinates, and block tables that agree with the
// model on every entry the query read and are completed injectively elsewhere, so the concrete evaluator
// can re-check the counterexample with real tables.
#include <cstdint>
#include <string>
#include <vector>
#include <z3++.h>

#include "layout/block_tables.hpp"
#include "prove/encoder.hpp"
#include "prove/session.hpp"

namespace kvlayout::prove {

std::int64_t model_int(const z3::model& m, const z3::expr& e);
std::vector<std::int64_t> model_coords(const z3::model& m, const SymbolicPosition& p);

// @post every lookup whose entry the model puts inside its table reads the model's value; the tables are
// injective and within range. Throws std::logic_error if the model contradicts the table axioms.
layout::BlockTables tables_from_model(const Encoder& encoder, const z3::model& m);
// The same for lookups gathered from several encoders that share one set of table functions.
layout::BlockTables tables_from_model(const layout::BoundLayout& bound, const std::vector<Encoder::LookupTerm>& lookups,
                                      const z3::model& m);

// Drives `vars` (in order) to their smallest values still satisfying `s`, by bounded queries; stops
// early at a step the solver cannot answer. @pre s is satisfiable. Returns the final model.
z3::model minimise(Query& query, const std::vector<z3::expr>& vars);

}  // namespace kvlayout::prove

#pragma once
// Internal to the refinement check (check/refinement.cpp): the solver steps and the shared pairing.
#include <chrono>
#include <vector>

#include "check/result.hpp"
#include "expr/expr.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"
#include "prove/session.hpp"

namespace kvlayout::check::refinement {

// ASSUMED's tables and tensors paired with REAL's by name (index into REAL's lists).
struct Pairing {
  const layout::BoundLayout& real;
  const layout::BoundLayout& assumed;
  std::vector<int> table_map;   // one per assumed table
  std::vector<int> tensor_map;  // one per assumed tensor
  const prove::ProveOptions& options;
};

// REAL's concrete tables re-ordered as ASSUMED declares them (ASSUMED reads REAL's tables by name).
layout::BlockTables assumed_tables(const Pairing& p, const layout::BlockTables& real_tables);

// Each step returns its record; on refutation it also sets out's verdict, message, details and
// counterexample (re-checked with layout::locate). Unknown leaves out's verdict to the caller.
// @pre defined proven for both; in-bounds before refines (refines assumes ASSUMED's reads lie in the tables).
CheckStep step_in_bounds(const Pairing& p, prove::Session& session, CheckResult& out);
CheckStep step_refines(const Pairing& p, prove::Session& session, CheckResult& out);
// @pre scope is bound against REAL (a truth value over its coordinates).
CheckStep step_covers_scope(const Pairing& p, prove::Session& session, const expr::Expr& scope, CheckResult& out);

// "kv_cache[0] element 16384". @pre loc has an address (Held, or an offset outside the tensor).
std::string address_text(const layout::BoundLayout& b, const layout::Location& loc);
// Fills out's message, details and counterexample ({"assumed", "real", "stored"}) for a position x that
// ASSUMED holds at la and REAL locates at lr under real_tables; `what` ends the message.
// @pre la and lr are layout::locate's answers for x (ASSUMED's with the tables re-ordered by assumed_tables).
void explain(const Pairing& p, const std::vector<std::int64_t>& x, const layout::BlockTables& real_tables,
             const layout::Location& la, const layout::Location& lr, const std::string& what, CheckResult& out);

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kvlayout::check::refinement

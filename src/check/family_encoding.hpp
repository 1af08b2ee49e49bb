#pragma once
// The solver's view of a families plan: one encoder per side (their own table functions) and one for the
// plan's expressions that reads the concatenation of both sides' table functions, so `source.T[b]` in a
// family and `T[token / 16]` in the source layout are the same uninterpreted function.
#include <string>
#include <vector>
#include <z3++.h>

#include <nlohmann/json.hpp>

#include "check/family_plan.hpp"
#include "layout/block_tables.hpp"
#include "prove/encoder.hpp"

namespace kvlayout::check {

struct PlanEncoders {
  prove::Encoder s, t, f;
  const FamilyPlan& plan;
  PlanEncoders(z3::context& ctx, const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& p)
      : s(ctx, source, "S"), t(ctx, target, "T"), f(ctx, p.names, "F", std::vector<const prove::Encoder*>{&s, &t}), plan(p) {}
  // Every table lookup encoded so far (all three encoders) is in range and injective.
  z3::expr axioms() { return s.table_axioms() && t.table_axioms() && f.table_axioms(); }
};

// One symbolic member of a family: its variables and its evaluated expressions.
struct SymbolicMember {
  prove::SymbolicPosition v;
  z3::expr box, source_instance, source_offset, target_instance, target_offset, bytes, defined;
};

SymbolicMember symbolic_member(PlanEncoders& e, const Family& f, const std::string& name);

// Concrete tables for both sides from a model: every entry any of the three encoders read takes the model's
// value; the rest completes each table injectively.
struct ModelTables {
  layout::BlockTables source, target;
  nlohmann::json read;  // {"source.block_table": {"3": 7}, ...}: the entries the plan's expressions read
};
ModelTables model_tables(PlanEncoders& e, const z3::model& m);

// The member's variables in the model.
std::vector<std::int64_t> model_vars(const z3::model& m, const SymbolicMember& s);

}  // namespace kvlayout::check

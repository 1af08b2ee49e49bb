#pragma once
// A `families` plan read and bound: each family is a box of named index variables (`over`) and, per
// member, a source and a target byte range given by expressions over those variables, the layouts'
// parameters and both sides' block tables (`source.TABLE[e]`, `target.TABLE[e]`). The expressions are
// bound against one synthetic layout whose tables are the source's then the target's (renamed
// `source__T` / `target__T`), so one encoder reads the very table functions the two sides' encoders use.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "expr/expr.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

struct FamilySide {
  int tensor = 0;
  expr::Expr instance;  // over the family's variables (Coord i = over variable i)
  expr::Expr offset;    // byte offset within the instance's allocation
};

struct Family {
  std::string path;                  // "/families/3"
  std::string id;                    // the member "id" when given, else the index
  std::vector<std::string> vars;     // over variables, in the order given
  std::vector<std::int64_t> first;   // each variable ranges over [first, end)
  std::vector<std::int64_t> end;
  FamilySide source, target;
  expr::Expr bytes;
  std::int64_t members = 0;          // product of the ranges (checked)
  // Optional hint "at": the target position each member byte writes, one expression per target coordinate
  // over the variables and `byte` (Coord vars.size()), the byte within the member. Only a candidate: the
  // checker proves it (then no member byte writes padding) or ignores it; never trusted.
  std::vector<expr::Expr> at;
};

struct FamilyPlan {
  layout::BoundLayout names;         // the synthetic binding scope (no coordinates; both sides' tables)
  std::size_t source_tables = 0;     // tables [0, source_tables) are the source's, the rest the target's
  std::vector<Family> families;
  std::optional<expr::Expr> scope;   // over the target's coordinates; absent = every held position
  std::string scope_text;
};

// @pre plan["form"] == "families"; both sides fit. Throws SpecError (file, JSON path) for anything malformed:
// an unknown tensor or name, a range that is not constant, an empty variable name, a duplicated variable.
FamilyPlan read_family_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                            const nlohmann::json& plan, const std::string& file);

// One member evaluated under concrete tables. `error` is set (and the numbers partial) when an expression
// divides by zero, overflows or reads a table outside its length.
struct ConcreteMember {
  std::int64_t source_instance = 0, source_offset = 0, target_instance = 0, target_offset = 0, bytes = 0;
  std::string error;
};

ConcreteMember evaluate_member(const FamilyPlan& plan, const Family& f, const std::vector<std::int64_t>& vars,
                               const layout::BlockTables& source_tables, const layout::BlockTables& target_tables);

// {"layer": 3, "b": 17} for a member's variables.
nlohmann::json member_json(const Family& f, const std::vector<std::int64_t>& vars);
std::string member_text(const Family& f, const std::vector<std::int64_t>& vars);

}  // namespace kvlayout::check

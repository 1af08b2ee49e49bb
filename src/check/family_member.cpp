// One member of a family plan made concrete: its expressions evaluated under concrete block tables (an
// error, never an exception, when one divides by zero, overflows or reads a table outside its length), and
// how a member is named in reports. Used by the witnesses' re-checks and by the enumeration oracle.
#include <stdexcept>

#include "check/family_plan.hpp"
#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"

namespace kvlayout::check {

ConcreteMember evaluate_member(const FamilyPlan& plan, const Family& f, const std::vector<std::int64_t>& vars,
                               const layout::BlockTables& source_tables, const layout::BlockTables& target_tables) {
  ConcreteMember m;
  expr::Environment env;
  env.coords = vars;
  env.lookup = [&](int table, std::int64_t entry) -> std::int64_t {
    const auto& t = plan.names.tables.at(static_cast<std::size_t>(table));
    if (entry < 0 || entry >= t.length)
      throw std::out_of_range(t.name + "[" + std::to_string(entry) + "] outside its " + std::to_string(t.length) + " entries");
    auto i = static_cast<std::size_t>(table);
    return i < plan.source_tables ? source_tables.entry(i, entry) : target_tables.entry(i - plan.source_tables, entry);
  };
  try {
    m.source_instance = expr::evaluate(f.source.instance, env);
    m.source_offset = expr::evaluate(f.source.offset, env);
    m.target_instance = expr::evaluate(f.target.instance, env);
    m.target_offset = expr::evaluate(f.target.offset, env);
    m.bytes = expr::evaluate(f.bytes, env);
  } catch (const expr::ArithmeticError& e) {
    m.error = e.what();
  } catch (const std::out_of_range& e) {
    m.error = std::string("a table read ") + e.what();
  }
  // Names in errors use the plan's spelling.
  for (std::size_t at; (at = m.error.find("__")) != std::string::npos;) m.error.replace(at, 2, ".");
  return m;
}

nlohmann::json member_json(const Family& f, const std::vector<std::int64_t>& vars) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < f.vars.size(); ++i) out[f.vars[i]] = vars.at(i);
  return out;
}

std::string member_text(const Family& f, const std::vector<std::int64_t>& vars) {
  std::string out = "family " + f.id + " (";
  for (std::size_t i = 0; i < f.vars.size(); ++i) out += (i ? ", " : "") + f.vars[i] + " " + std::to_string(vars.at(i));
  return out + ")";
}

}  // namespace kvlayout::check

// The block tables and the scope of a concrete plan: `tables` applied to identity tables of each side
// (named as prove's counterexamples name them), `scope` bound against TARGET.
#include "check/plan_json_util.hpp"
#include "layout/bind_expression.hpp"

namespace kvlayout::check {

using namespace plan_json_util;

void read_tables(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                 const std::string& file, layout::BlockTables& source_tables, layout::BlockTables& target_tables) {
  source_tables = layout::identity_tables(source);
  target_tables = layout::identity_tables(target);
  const nlohmann::json* tables = member(plan, "tables");
  if (!tables) return;
  if (!tables->is_object()) fail(file, "/tables", *tables, "an object {\"source.TABLE\": [...], \"target.TABLE\": [...]}");
  for (auto it = tables->begin(); it != tables->end(); ++it) {
    const std::string key = it.key(), path = "/tables/" + key;
    const bool is_source = key.rfind("source.", 0) == 0, is_target = key.rfind("target.", 0) == 0;
    if (!is_source && !is_target)
      throw spec::SpecError(file, path, "the name \"" + key + "\"", "source.TABLE or target.TABLE (tables named as in prove's counterexamples)");
    const layout::BoundLayout& b = is_source ? source : target;
    const std::string name = key.substr(7);
    if (!it.value().is_array()) fail(file, path, it.value(), "an array of table entries");
    std::vector<std::int64_t> entries;
    entries.reserve(it.value().size());
    for (std::size_t i = 0; i < it.value().size(); ++i) {
      const nlohmann::json& e = it.value()[i];
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
        fail(file, path + "/" + std::to_string(i), e, "an integer table entry");
      entries.push_back(e.get<std::int64_t>());
    }
    try {
      layout::set_table(b, is_source ? source_tables : target_tables, name, entries);
    } catch (const spec::SpecError& e) {
      throw spec::SpecError(file, path, e.found, e.expected + " (" + (is_source ? "source " : "target ") + b.layout->name + ")");
    }
  }
}

expr::Expr read_scope(const layout::BoundLayout& target, const nlohmann::json& plan, const std::string& file) {
  const nlohmann::json* scope = member(plan, "scope");
  if (!scope) return nullptr;
  if (!scope->is_string()) fail(file, "/scope", *scope, "a truth value over the content's coordinates, e.g. \"token < 32\"");
  return layout::bind_expression(target, scope->get<std::string>(), file, "/scope", true);
}

}  // namespace kvlayout::check

#include "spec/name_check.hpp"

#include <algorithm>
#include <cctype>

#include "expr/print.hpp"
#include "spec/cache_shape.hpp"
#include "spec/error.hpp"

namespace kvlayout::spec {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string visible(const Scope& scope, bool tables) {
  std::vector<std::string> parts;
  if (!scope.coords.empty()) parts.push_back("a logical coordinate (" + join(scope.coords) + ")");
  if (!scope.params.empty()) parts.push_back("a layout parameter (" + join(scope.params) + ")");
  if (scope.cache_params) parts.push_back("a cache-shape parameter (" + join(cache_parameter_names()) + ")");
  if (tables) {
    if (scope.tables.empty()) return "no table lookup here (tables are used only in index expressions)";
    return "a declared table (" + join(scope.tables) + ")";
  }
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i)
    s += (i == 0 ? "" : i + 1 == parts.size() ? " or " : ", ") + parts[i];
  return s.empty() ? "no names here (only integer literals)" : s;
}

bool has_lookup(const expr::Expr& e) {
  if (e->op == expr::Op::Lookup) return true;
  return std::any_of(e->args.begin(), e->args.end(), [](const expr::Expr& a) { return has_lookup(a); });
}

void walk(const expr::Expr& e, const SourceExpr& where, const Scope& scope, const std::string& file) {
  if (e->op == expr::Op::IsPow2) {
    std::string depends;
    for (const auto& n : referenced_names(e->args[0]))
      if (depends.empty() && contains(scope.coords, n)) depends = "the coordinate `" + n + "`";
    if (depends.empty() && has_lookup(e->args[0])) depends = "a table entry";
    if (!depends.empty())
      throw SpecError(file, where.path,
                      "`" + expr::to_string(e) + "` in `" + where.text + "`, whose argument depends on " + depends,
                      "is_pow2 of an expression over parameters only (a proof cannot test a coordinate for a power of two)");
  }
  if (e->op == expr::Op::Name) {
    bool ok = contains(scope.coords, e->name) || contains(scope.params, e->name) ||
              (scope.cache_params && contains(cache_parameter_names(), e->name));
    if (!ok)
      throw SpecError(file, where.path, "the unknown name `" + e->name + "` in `" + where.text + "`",
                      visible(scope, false));
  }
  if (e->op == expr::Op::Lookup && !contains(scope.tables, e->name))
    throw SpecError(file, where.path, "a lookup in `" + e->name + "[...]` in `" + where.text + "`",
                    visible(scope, true));
  for (const auto& a : e->args) walk(a, where, scope, file);
}

void collect(const expr::Expr& e, std::vector<std::string>& out) {
  if (e->op == expr::Op::Name && !contains(out, e->name)) out.push_back(e->name);
  for (const auto& a : e->args) collect(a, out);
}

}  // namespace

void check_expression(const SourceExpr& e, const Scope& scope, expr::Type want, const std::string& file) {
  walk(e.expr, e, scope, file);
  expr::Type got;
  try {
    got = expr::type_of(e.expr);
  } catch (const expr::TypeError& t) {
    throw SpecError(file, e.path, "`" + e.text + "`, in which " + t.what(), "a well-typed expression");
  }
  if (got != want)
    throw SpecError(file, e.path, "`" + e.text + "`, which is " + expr::type_name(got),
                    std::string(expr::type_name(want)) + " here");
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<std::string> referenced_names(const expr::Expr& e) {
  std::vector<std::string> out;
  collect(e, out);
  return out;
}

}  // namespace kvlayout::spec

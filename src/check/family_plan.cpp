// Reading a `families` plan (family_plan.hpp): the top level, each family's variables and ranges, its two
// sides and its optional "at" hint, all bound against one synthetic scope holding both sides' parameters
// and tables. Evaluating a member under concrete tables is family_member.cpp's.
#include "check/family_plan.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>

#include "check/plan_top_level.hpp"
#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

// `source.block_table[b]` -> `source__block_table[b]`: the language has no dotted names, so the side prefix
// becomes part of the name the synthetic scope binds.
std::string undot(const std::string& text) {
  static const std::regex side(R"((^|[^A-Za-z0-9_])(source|target)\.)");
  return std::regex_replace(text, side, "$1$2__");
}

// The names a family expression may use: both sides' parameters (plain when the sides agree, and always as
// source.P / target.P) and both sides' tables (as source.T / target.T).
layout::BoundLayout binding_scope(const layout::BoundLayout& source, const layout::BoundLayout& target) {
  layout::BoundLayout names;
  names.cache = target.cache;
  for (const auto& [n, v] : source.values) {
    names.values["source__" + n] = v;
    auto it = target.values.find(n);
    if (it == target.values.end() || it->second == v) names.values[n] = v;
  }
  for (const auto& [n, v] : target.values) {
    names.values["target__" + n] = v;
    auto it = source.values.find(n);
    if (it == source.values.end()) names.values[n] = v;
  }
  for (auto t : source.tables) {
    t.name = "source__" + t.name;
    names.tables.push_back(t);
  }
  for (auto t : target.tables) {
    t.name = "target__" + t.name;
    names.tables.push_back(t);
  }
  return names;
}

// Unknown members are typos ("ofset") that would silently fall back to a default: refuse them.
void known_members(const nlohmann::json& j, std::initializer_list<const char*> names, const std::string& file, const std::string& path) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    std::string list;
    for (const char* n : names) {
      known = known || it.key() == n;
      list += (list.empty() ? "" : ", ") + std::string(n);
    }
    if (!known) throw spec::SpecError(file, path + "/" + it.key(), "an unknown member \"" + it.key() + "\"", "one of: " + list);
  }
}

std::string text_of(const nlohmann::json& j, const std::string& file, const std::string& path, const char* expected) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  throw spec::SpecError(file, path, j.dump(), expected);
}

std::int64_t constant(const FamilyPlan& p, const nlohmann::json& j, const std::string& file, const std::string& path) {
  std::string text = text_of(j, file, path, "an integer or a constant expression");
  expr::Expr e = layout::bind_expression(p.names, undot(text), file, path, false);
  if (e->op != expr::Op::Literal)
    throw spec::SpecError(file, path, "`" + text + "`, which is not constant", "a range over parameters only");
  return e->value;
}

FamilySide read_side(const FamilyPlan& p, const layout::BoundLayout& bound, const nlohmann::json& j, const std::vector<std::string>& vars,
                     const std::string& file, const std::string& path) {
  if (!j.is_object()) throw spec::SpecError(file, path, j.dump(), "{\"tensor\", \"instance\", \"offset\"}");
  known_members(j, {"tensor", "instance", "offset"}, file, path);
  FamilySide s;
  if (!j.contains("tensor") || !j["tensor"].is_string())
    throw spec::SpecError(file, path + "/tensor", j.contains("tensor") ? j["tensor"].dump() : "nothing", "a tensor name");
  std::string name = j["tensor"].get<std::string>();
  s.tensor = -1;
  for (std::size_t i = 0; i < bound.tensors.size(); ++i)
    if (bound.tensors[i].name == name) s.tensor = static_cast<int>(i);
  if (s.tensor < 0) {
    std::string known;
    for (const auto& t : bound.tensors) known += (known.empty() ? "" : ", ") + t.name;
    throw spec::SpecError(file, path + "/tensor", "\"" + name + "\"", "a tensor of " + bound.layout->name + " (" + known + ")");
  }
  auto bind = [&](const char* key, const std::string& fallback) {
    std::string text = j.contains(key) ? text_of(j[key], file, path + "/" + key, "an expression") : fallback;
    if (text.empty()) throw spec::SpecError(file, path + "/" + key, "nothing", "an expression");
    return layout::bind_expression(p.names, undot(text), file, path + "/" + key, false, vars);
  };
  s.instance = bind("instance", "0");
  s.offset = bind("offset", "");
  return s;
}

Family read_family(const FamilyPlan& p, const layout::BoundLayout& source, const layout::BoundLayout& target,
                   const nlohmann::json& j, const std::string& file, const std::string& path, std::size_t index) {
  if (!j.is_object()) throw spec::SpecError(file, path, j.dump(), "a family {\"over\", \"source\", \"target\", \"bytes\"}");
  known_members(j, {"id", "over", "source", "target", "bytes", "at", "comment"}, file, path);
  Family f;
  f.path = path;
  f.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : std::to_string(index);
  const nlohmann::json over = j.contains("over") ? j["over"] : nlohmann::json::object();
  if (!over.is_object()) throw spec::SpecError(file, path + "/over", over.dump(), "{\"VAR\": extent or [first, end], ...}");
  static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
  f.members = 1;
  for (const auto& [var, range] : over.items()) {
    const std::string vp = path + "/over/" + var;
    if (!std::regex_match(var, identifier) || var.find("__") != std::string::npos)
      throw spec::SpecError(file, vp, "\"" + var + "\"", "a variable name (letters, digits, _; no __)");
    std::int64_t lo = 0, hi = 0;
    if (range.is_array()) {
      if (range.size() != 2) throw spec::SpecError(file, vp, range.dump(), "[first, end]");
      lo = constant(p, range[0], file, vp + "/0");
      hi = constant(p, range[1], file, vp + "/1");
    } else {
      hi = constant(p, range, file, vp);
    }
    if (hi < lo) throw spec::SpecError(file, vp, std::to_string(lo) + ".." + std::to_string(hi), "first <= end");
    f.vars.push_back(var);
    f.first.push_back(lo);
    f.end.push_back(hi);
    f.members = expr::checked_mul(f.members, expr::checked_sub(hi, lo));
  }
  for (const char* key : {"source", "target", "bytes"})
    if (!j.contains(key)) throw spec::SpecError(file, path + "/" + key, "nothing", std::string("the family's ") + key);
  f.source = read_side(p, source, j["source"], f.vars, file, path + "/source");
  f.target = read_side(p, target, j["target"], f.vars, file, path + "/target");
  if (j.contains("at")) {
    const nlohmann::json& at = j["at"];
    const std::string ap = path + "/at";
    if (std::find(f.vars.begin(), f.vars.end(), "byte") != f.vars.end())
      throw spec::SpecError(file, ap, "a variable named byte", "no over variable named byte when \"at\" is given");
    if (!at.is_object() || at.size() != target.coord_names.size())
      throw spec::SpecError(file, ap, at.dump().substr(0, 80), "one expression per target coordinate");
    std::vector<std::string> extra = f.vars;
    extra.push_back("byte");
    for (const auto& c : target.coord_names) {
      if (!at.contains(c)) throw spec::SpecError(file, ap + "/" + c, "nothing", "an expression for coordinate " + c);
      f.at.push_back(layout::bind_expression(p.names, undot(text_of(at[c], file, ap + "/" + c, "an expression")), file,
                                             ap + "/" + c, false, extra));
    }
  }
  f.bytes = layout::bind_expression(p.names, undot(text_of(j["bytes"], file, path + "/bytes", "an expression")), file,
                                    path + "/bytes", false, f.vars);
  return f;
}

}  // namespace

FamilyPlan read_family_plan(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                            const std::string& file) {
  FamilyPlan p;
  ignore_unknown_top_level(plan, {"form", "families", "scope", "comment", "request"}, file);
  p.names = binding_scope(source, target);
  p.source_tables = source.tables.size();
  if (!plan.contains("families") || !plan["families"].is_array() || plan["families"].empty())
    throw spec::SpecError(file, "/families", plan.contains("families") ? plan["families"].dump().substr(0, 80) : "nothing",
                          "a non-empty list of families");
  try {
    for (std::size_t i = 0; i < plan["families"].size(); ++i)
      p.families.push_back(read_family(p, source, target, plan["families"][i], file, "/families/" + std::to_string(i), i));
  } catch (const expr::ArithmeticError& e) {
    throw spec::SpecError(file, "/families", std::string("a range whose member count overflows: ") + e.what(),
                          "ranges whose product fits in 64 bits");
  }
  if (plan.contains("scope") && !plan["scope"].is_null()) {
    if (!plan["scope"].is_string()) throw spec::SpecError(file, "/scope", plan["scope"].dump(), "a truth value over coordinates");
    p.scope_text = plan["scope"].get<std::string>();
    p.scope = layout::bind_expression(target, p.scope_text, file, "/scope", true);
  }
  return p;
}

}  // namespace kvlayout::check

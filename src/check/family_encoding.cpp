#include "check/family_encoding.hpp"

#include "prove/model.hpp"

namespace kvlayout::check {

SymbolicMember symbolic_member(PlanEncoders& e, const Family& f, const std::string& name) {
  z3::context& ctx = e.f.ctx();
  prove::SymbolicPosition v{name, {}};
  z3::expr box = ctx.bool_val(true);
  for (std::size_t i = 0; i < f.vars.size(); ++i) {
    v.coords.push_back(ctx.int_const(("F." + name + "." + f.vars[i]).c_str()));
    box = box && v.coords.back() >= ctx.int_val(static_cast<int64_t>(f.first[i])) &&
          v.coords.back() < ctx.int_val(static_cast<int64_t>(f.end[i]));
  }
  prove::Encoder& en = e.f;
  z3::expr defined = en.defined(f.source.instance, v) && en.defined(f.source.offset, v) && en.defined(f.target.instance, v) &&
                     en.defined(f.target.offset, v) && en.defined(f.bytes, v);
  return SymbolicMember{v,
                        box,
                        en.value(f.source.instance, v),
                        en.value(f.source.offset, v),
                        en.value(f.target.instance, v),
                        en.value(f.target.offset, v),
                        en.value(f.bytes, v),
                        defined};
}

ModelTables model_tables(PlanEncoders& e, const z3::model& m) {
  std::vector<prove::Encoder::LookupTerm> source = e.s.lookups(), target = e.t.lookups();
  ModelTables out;
  out.read = nlohmann::json::object();
  const auto ns = static_cast<int>(e.plan.source_tables);
  for (const auto& l : e.f.lookups()) {
    const auto& t = e.plan.names.tables[static_cast<std::size_t>(l.table)];
    std::int64_t entry = prove::model_int(m, l.entry);
    if (entry >= 0 && entry < t.length) {
      std::string name = t.name;
      name.replace(name.find("__"), 2, ".");
      out.read[name][std::to_string(entry)] = prove::model_int(m, l.value);
    }
    if (l.table < ns) source.push_back(l);
    else target.push_back({l.table - ns, l.entry, l.value});
  }
  out.source = prove::tables_from_model(e.s.bound(), source, m);
  out.target = prove::tables_from_model(e.t.bound(), target, m);
  return out;
}

std::vector<std::int64_t> model_vars(const z3::model& m, const SymbolicMember& s) { return prove::model_coords(m, s.v); }

}  // namespace kvlayout::check

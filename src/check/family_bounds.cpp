// The families plan's questions about where members write: out of bounds (any member, any table), two
// member bytes on one target byte, and the target layout's own in-bounds and injectivity (what counting
// its bytes relies on). Each model is re-checked concretely before it is shown; a witness that does not
// reproduce is an internal error.
#include "check/family_checks.hpp"

#include "check/family_affine.hpp"
#include "check/family_encoding.hpp"
#include "check/family_query_util.hpp"
#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"

namespace kvlayout::check {

using namespace family_util;

Finding find_out_of_bounds(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const FamilyPlan& plan) {
  Finding out;
  z3::context& c = s.ctx();
  for (const Family& f : plan.families) {
    PlanEncoders e(c, source, target, plan);
    SymbolicMember m = symbolic_member(e, f, "a");
    auto leaves = [&](const layout::BoundLayout& b, int tensor, const z3::expr& inst, const z3::expr& off) {
      const auto& t = b.tensors[static_cast<std::size_t>(tensor)];
      return inst < 0 || inst >= ival(c, t.instances) || off < 0 || off + m.bytes > ival(c, allocation_bytes(b, tensor));
    };
    z3::expr bad = !m.defined || e.f.entry_outside_table() || m.bytes < 0 ||
                   (m.bytes > 0 && (leaves(source, f.source.tensor, m.source_instance, m.source_offset) ||
                                    leaves(target, f.target.tensor, m.target_instance, m.target_offset)));
    prove::Query q(s, "family " + f.id + " in bounds");
    q.add(m.box && bad && e.axioms());
    Answer a = q.check();
    if (a == Answer::Unknown) note_unknown(out, q, "in-bounds of family " + f.id);
    if (a != Answer::Sat) continue;
    z3::model model = prove::minimise(q, m.v.coords);
    std::vector<std::int64_t> vars = model_vars(model, m);
    ModelTables tables = model_tables(e, model);
    ConcreteMember cm = evaluate_member(plan, f, vars, tables.source, tables.target);
    std::string why = cm.error;
    if (why.empty() && cm.bytes < 0) why = "a negative length " + std::to_string(cm.bytes);
    if (why.empty() && cm.bytes > 0) why = outside(source, f.source.tensor, cm.source_instance, cm.source_offset, cm.bytes, "source");
    if (why.empty() && cm.bytes > 0) why = outside(target, f.target.tensor, cm.target_instance, cm.target_offset, cm.bytes, "target");
    if (why.empty()) throw prove::InternalError("out-of-bounds witness " + member_text(f, vars) + " does not reproduce");
    nlohmann::json cx = {{"family", f.id}, {"member", member_json(f, vars)}, {"tables", tables.read}, {"why", why}};
    if (cm.error.empty()) {
      cx["source"] = side_json(source, f.source.tensor, cm.source_instance, cm.source_offset, cm.bytes);
      cx["target"] = side_json(target, f.target.tensor, cm.target_instance, cm.target_offset, cm.bytes);
    }
    out.result = found(Verdict::OutOfBounds, member_text(f, vars) + ": " + why, cx,
                       {member_text(f, vars) + " under the tables " + tables.read.dump(), why});
    return out;
  }
  return out;
}

Finding find_aliased(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan) {
  Finding out;
  z3::context& c = s.ctx();
  for (std::size_t fi = 0; fi < plan.families.size(); ++fi) {
    for (std::size_t gi = fi; gi < plan.families.size(); ++gi) {
      const Family& f = plan.families[fi];
      const Family& g = plan.families[gi];
      if (f.target.tensor != g.target.tensor) continue;
      if (fi == gi ? affine_distinct(plan, f) : affine_distinct(plan, f, g)) continue;  // proved without the solver
      // First from different source bytes (a wrong value may land), then any second write (which the
      // coverage count cannot tolerate either).
      for (bool different : {true, false}) {
        PlanEncoders e(c, source, target, plan);
        SymbolicMember a = symbolic_member(e, f, "a"), b = symbolic_member(e, g, "b");
        z3::expr ka = c.int_const("ka"), kb = c.int_const("kb");
        z3::expr distinct = c.bool_val(fi != gi);
        if (fi == gi)
          for (std::size_t i = 0; i < a.v.coords.size(); ++i) distinct = distinct || a.v.coords[i] != b.v.coords[i];
        z3::expr cond = a.box && b.box && ka >= 0 && ka < a.bytes && kb >= 0 && kb < b.bytes && distinct &&
                        a.target_instance == b.target_instance && a.target_offset + ka == b.target_offset + kb;
        if (different)
          cond = cond && (c.bool_val(f.source.tensor != g.source.tensor) || a.source_instance != b.source_instance ||
                          a.source_offset + ka != b.source_offset + kb);
        prove::Query q(s, "families " + f.id + " and " + g.id + (different ? " write one byte from two" : " write one byte twice"));
        q.add(cond && e.axioms());
        Answer ans = q.check();
        if (ans == Answer::Unknown) note_unknown(out, q, "aliasing of families " + f.id + ", " + g.id);
        if (ans != Answer::Sat) continue;
        std::vector<z3::expr> order = a.v.coords;
        order.insert(order.end(), b.v.coords.begin(), b.v.coords.end());
        z3::model model = prove::minimise(q, order);
        std::vector<std::int64_t> va = model_vars(model, a), vb = model_vars(model, b);
        std::int64_t ka_v = prove::model_int(model, ka), kb_v = prove::model_int(model, kb);
        ModelTables tables = model_tables(e, model);
        ConcreteMember ma = evaluate_member(plan, f, va, tables.source, tables.target);
        ConcreteMember mb = evaluate_member(plan, g, vb, tables.source, tables.target);
        bool ok = ma.error.empty() && mb.error.empty() && (fi != gi || va != vb) && ka_v >= 0 && ka_v < ma.bytes && kb_v >= 0 &&
                  kb_v < mb.bytes && ma.target_instance == mb.target_instance &&
                  ma.target_offset + ka_v == mb.target_offset + kb_v;
        bool from_two = f.source.tensor != g.source.tensor || ma.source_instance != mb.source_instance ||
                        ma.source_offset + ka_v != mb.source_offset + kb_v;
        if (!ok || (different && !from_two))
          throw prove::InternalError("aliasing witness " + member_text(f, va) + " / " + member_text(g, vb) + " does not reproduce");
        const std::string tname = target.tensors[static_cast<std::size_t>(f.target.tensor)].name;
        std::string where = tname + "[" + std::to_string(ma.target_instance) + "] byte " + std::to_string(ma.target_offset + ka_v);
        std::string msg = member_text(f, va) + " byte " + std::to_string(ka_v) + " and " + member_text(g, vb) + " byte " +
                          std::to_string(kb_v) + " both write " + where +
                          (from_two ? ", from different source bytes" : ", from the same source byte (a duplicate write)");
        nlohmann::json cx = {{"target", {{"tensor", tname}, {"instance", ma.target_instance}, {"byte", ma.target_offset + ka_v}}},
                             {"first", {{"family", f.id}, {"member", member_json(f, va)}, {"byte", ka_v},
                                        {"source", {{"instance", ma.source_instance}, {"byte", ma.source_offset + ka_v}}}}},
                             {"second", {{"family", g.id}, {"member", member_json(g, vb)}, {"byte", kb_v},
                                         {"source", {{"instance", mb.source_instance}, {"byte", mb.source_offset + kb_v}}}}},
                             {"same_source_byte", !from_two},
                             {"tables", tables.read}};
        out.result = found(Verdict::Aliased, msg, cx, {msg, "tables read: " + tables.read.dump()});
        return out;
      }
    }
  }
  return out;
}

Finding check_target_sound(prove::Session& s, const layout::BoundLayout& target) {
  Finding out;
  z3::context& c = s.ctx();
  for (std::size_t t = 0; t < target.tensors.size(); ++t) {
    const auto& tensor = target.tensors[t];
    for (std::size_t v = 0; v < tensor.views.size(); ++v) {
      prove::Encoder e(c, target, "T");
      prove::SymbolicPosition x = e.position("x");
      z3::expr inst = e.instance(t, x), off = e.offset(t, v, x);
      z3::expr bad = !e.within_axes(t, v, x) || off < 0 || off >= ival(c, tensor.size) || inst < 0 ||
                     inst >= ival(c, tensor.instances) || e.entry_outside_table();
      prove::Query q(s, "target in bounds " + tensor.views[v].name);
      q.add(e.in_box(x) && e.view_domain(t, v, x) && bad && e.table_axioms());
      Answer a = q.check();
      if (a != Answer::Unsat) {
        out.unknown = "the target layout's own in-bounds obligation is not proved (" +
                      std::string(a == Answer::Sat ? "refuted" : "unknown") + "); run kvlayout prove on it";
        return out;
      }
    }
  }
  for (std::size_t t = 0; t < target.tensors.size(); ++t)
    for (std::size_t v = 0; v < target.tensors[t].views.size(); ++v)
      for (std::size_t w = v; w < target.tensors[t].views.size(); ++w) {
        prove::Encoder e(c, target, "T");
        prove::SymbolicPosition x = e.position("x"), y = e.position("y");
        z3::expr differ = c.bool_val(false);
        for (std::size_t i = 0; i < x.coords.size(); ++i) differ = differ || x.coords[i] != y.coords[i];
        prove::Query q(s, "target injective " + target.tensors[t].views[v].name + "/" + target.tensors[t].views[w].name);
        q.add(e.in_box(x) && e.in_box(y) && e.view_domain(t, v, x) && e.view_domain(t, w, y) && differ &&
              e.instance(t, x) == e.instance(t, y) && e.offset(t, v, x) == e.offset(t, w, y) && e.table_axioms());
        Answer a = q.check();
        if (a != Answer::Unsat) {
          out.unknown = "the target layout's own injectivity is not proved (" + std::string(a == Answer::Sat ? "refuted" : "unknown") +
                        "); run kvlayout prove on it";
          return out;
        }
      }
  return out;
}

}  // namespace kvlayout::check

// The families plan's questions about where members write: out of bounds (any member, any table), and the
// target layout's own in-bounds and injectivity (what counting its bytes relies on); two member bytes on
// one target byte are family_aliasing.cpp's. Each model is re-checked concretely before it is shown; a
// witness that does not reproduce is an internal error.
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

// The families plan's questions about what members write: a member byte landing on a target position the
// source does not store at the byte it reads (WRONG_MAPPING), or on a held position outside the scope
// (FRAME_VIOLATION). Each model is re-checked with layout::locate before it is shown; a witness that does
// not reproduce is an internal error.
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

Finding find_wrong_mapping(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                           const FamilyPlan& plan) {
  Finding out;
  z3::context& c = s.ctx();
  const std::int64_t eb = source.element_bytes();
  for (const Family& f : plan.families) {
    const auto ts = static_cast<std::size_t>(f.source.tensor);
    for (std::size_t tv = 0; tv < target.tensors[static_cast<std::size_t>(f.target.tensor)].views.size(); ++tv) {
      PlanEncoders e(c, source, target, plan);
      SymbolicMember m = symbolic_member(e, f, "a");
      TargetHit h = target_hit(e, f, m, tv);
      // Where the source stores x at the same byte of the element as the member reads.
      auto stores = [&](const prove::SymbolicPosition& p, const z3::expr& byte_in_element) {
        z3::expr any = c.bool_val(false);
        for (std::size_t sv = 0; sv < source.tensors[ts].views.size(); ++sv)
          any = any || (e.s.view_domain(ts, sv, p) && e.s.instance(ts, p) == m.source_instance &&
                        e.s.offset(ts, sv, p) * ival(c, eb) + byte_in_element == m.source_offset + h.k);
        return any;
      };
      prove::Query q(s, "family " + f.id + " maps positions (target view " + std::to_string(tv) + ")");
      q.add(h.cond && !stores(h.x, h.j) && e.axioms());
      Answer a = q.check();
      if (a == Answer::Unknown) note_unknown(out, q, "mapping of family " + f.id);
      if (a != Answer::Sat) continue;
      std::vector<z3::expr> order = m.v.coords;
      order.push_back(h.k);
      z3::model model = prove::minimise(q, order);
      // Also name what the source stores at the byte the member reads, when it stores anything.
      prove::SymbolicPosition y = e.s.position("y");
      z3::expr j2 = c.int_const("j2");
      q.push();
      q.add(e.s.in_box(y) && j2 >= 0 && j2 < ival(c, eb) && stores(y, j2) && e.axioms());
      bool with_y = q.check(200) == Answer::Sat;
      if (with_y) model = q.model();
      std::vector<std::int64_t> vars = model_vars(model, m), x = prove::model_coords(model, h.x);
      std::int64_t k = prove::model_int(model, h.k), j = prove::model_int(model, h.j);
      ModelTables tables = model_tables(e, model);
      ConcreteMember cm = evaluate_member(plan, f, vars, tables.source, tables.target);
      layout::Location lt, ls;
      bool reproduces = cm.error.empty() && k >= 0 && k < cm.bytes &&
                        target_holds(target, x, tables.target, f.target.tensor, cm.target_instance, cm.target_offset + k, lt) &&
                        expr::floor_mod(cm.target_offset + k, eb) == j;
      ls = layout::locate(source, x, tables.source);
      bool source_right = ls.placement == layout::Placement::Held && ls.address.tensor == f.source.tensor &&
                          ls.address.instance == cm.source_instance && ls.address.offset * eb + j == cm.source_offset + k;
      if (!reproduces || source_right)
        throw prove::InternalError("wrong-mapping witness " + member_text(f, vars) + " does not reproduce");
      const std::string sname = source.tensors[ts].name;
      std::string read_at = sname + "[" + std::to_string(cm.source_instance) + "] byte " + std::to_string(cm.source_offset + k);
      nlohmann::json cx = {{"family", f.id}, {"member", member_json(f, vars)}, {"byte", k}, {"tables", tables.read},
                           {"destination", position_json(target, x, lt)},
                           {"reads", {{"tensor", sname}, {"instance", cm.source_instance}, {"byte", cm.source_offset + k}}},
                           {"expected_source", position_json(source, x, ls)}};
      std::vector<std::string> details = {member_text(f, vars) + " byte " + std::to_string(k) + " under the tables " + tables.read.dump(),
                                          "writes the element of " + position_text(target, x, lt),
                                          "but reads " + read_at + ", while the source stores that position at " + position_text(source, x, ls)};
      std::string msg = member_text(f, vars) + " writes " + layout::format_coordinate(target, x) + " from " + read_at;
      if (with_y) {
        std::vector<std::int64_t> yv = prove::model_coords(model, y);
        layout::Location ly = layout::locate(source, yv, tables.source);
        if (!(ly.placement == layout::Placement::Held && ly.address.tensor == f.source.tensor &&
              ly.address.instance == cm.source_instance && ly.address.offset == expr::floor_div(cm.source_offset + k, eb)))
          throw prove::InternalError("wrong-mapping source position " + layout::format_coordinate(source, yv) + " does not reproduce");
        cx["source"] = position_json(source, yv, ly);
        details.push_back("the source stores " + position_text(source, yv, ly) + " there");
        msg += ", where the source stores " + layout::format_coordinate(source, yv);
      } else {
        details.push_back("(no source position found at that byte within the solver's short limit: padding, or not searched)");
      }
      out.result = found(Verdict::WrongMapping, msg, cx, details);
      return out;
    }
  }
  return out;
}

Finding find_frame_held(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                        const FamilyPlan& plan) {
  Finding out;
  if (!plan.scope) return out;
  z3::context& c = s.ctx();
  for (const Family& f : plan.families) {
    for (std::size_t tv = 0; tv < target.tensors[static_cast<std::size_t>(f.target.tensor)].views.size(); ++tv) {
      PlanEncoders e(c, source, target, plan);
      SymbolicMember m = symbolic_member(e, f, "a");
      TargetHit h = target_hit(e, f, m, tv);
      prove::Query q(s, "family " + f.id + " stays in scope (target view " + std::to_string(tv) + ")");
      q.add(h.cond && !e.t.truth(*plan.scope, h.x) && e.axioms());
      Answer a = q.check();
      if (a == Answer::Unknown) note_unknown(out, q, "scope of family " + f.id);
      if (a != Answer::Sat) continue;
      std::vector<z3::expr> order = m.v.coords;
      order.push_back(h.k);
      z3::model model = prove::minimise(q, order);
      std::vector<std::int64_t> vars = model_vars(model, m), x = prove::model_coords(model, h.x);
      std::int64_t k = prove::model_int(model, h.k);
      ModelTables tables = model_tables(e, model);
      ConcreteMember cm = evaluate_member(plan, f, vars, tables.source, tables.target);
      layout::Location lt;
      expr::Environment env{x, [&](int t, std::int64_t i) { return tables.target.entry(static_cast<std::size_t>(t), i); }};
      bool reproduces = cm.error.empty() && k >= 0 && k < cm.bytes &&
                        target_holds(target, x, tables.target, f.target.tensor, cm.target_instance, cm.target_offset + k, lt) &&
                        expr::evaluate(*plan.scope, env) == 0;
      if (!reproduces) throw prove::InternalError("frame witness " + member_text(f, vars) + " does not reproduce");
      std::string msg = member_text(f, vars) + " writes " + layout::format_coordinate(target, x) + ", outside the scope `" +
                        plan.scope_text + "`";
      nlohmann::json cx = {{"family", f.id}, {"member", member_json(f, vars)}, {"byte", k}, {"tables", tables.read},
                           {"destination", position_json(target, x, lt)}, {"scope", plan.scope_text}};
      out.result = found(Verdict::FrameViolation, msg, cx,
                         {member_text(f, vars) + " byte " + std::to_string(k) + " under the tables " + tables.read.dump(),
                          "writes the element of " + position_text(target, x, lt) + ", which the scope excludes"});
      return out;
    }
  }
  return out;
}

}  // namespace kvlayout::check

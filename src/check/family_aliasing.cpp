// Two member bytes of a families plan on one target byte. The ALIASED is one target byte written
// from DIFFERENT source bytes (a wrong value may land, whatever the order of the copies); the same byte
// written twice from the same source byte is harmless, as in the descriptors form, and is not a verdict.
// But such a duplicate breaks the coverage count (family_coverage.cpp counts written bytes and needs each
// written once), so writes_once() reports it as the reason counting is unavailable. Each model is re-checked
// concretely before it is used; a witness that does not reproduce is an internal error.
#include "check/family_checks.hpp"

#include "check/family_affine.hpp"
#include "check/family_encoding.hpp"
#include "check/family_query_util.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"

namespace kvlayout::check {

using namespace family_util;

namespace {

// A target byte written by member bytes of f and g (two different member bytes), re-checked concretely.
struct Overlap {
  std::vector<std::int64_t> va, vb;
  std::int64_t ka = 0, kb = 0;
  ConcreteMember ma, mb;
  ModelTables tables;
  bool from_two = false;  // from different source bytes
};

// Asks whether f's and g's members write one target byte twice: from different source bytes when
// `different`, else from the same source byte. Unknown answers are noted in `out`.
std::optional<Overlap> overlap(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                               const FamilyPlan& plan, std::size_t fi, std::size_t gi, bool different, Finding& out) {
  z3::context& c = s.ctx();
  const Family& f = plan.families[fi];
  const Family& g = plan.families[gi];
  PlanEncoders e(c, source, target, plan);
  SymbolicMember a = symbolic_member(e, f, "a"), b = symbolic_member(e, g, "b");
  z3::expr ka = c.int_const("ka"), kb = c.int_const("kb");
  z3::expr distinct = c.bool_val(fi != gi);
  if (fi == gi)
    for (std::size_t i = 0; i < a.v.coords.size(); ++i) distinct = distinct || a.v.coords[i] != b.v.coords[i];
  z3::expr two_sources = c.bool_val(f.source.tensor != g.source.tensor) || a.source_instance != b.source_instance ||
                         a.source_offset + ka != b.source_offset + kb;
  z3::expr cond = a.box && b.box && ka >= 0 && ka < a.bytes && kb >= 0 && kb < b.bytes && distinct &&
                  a.target_instance == b.target_instance && a.target_offset + ka == b.target_offset + kb &&
                  (different ? two_sources : !two_sources);
  prove::Query q(s, "families " + f.id + " and " + g.id + (different ? " write one byte from two" : " write one byte twice"));
  q.add(cond && e.axioms());
  Answer ans = q.check();
  if (ans == Answer::Unknown) note_unknown(out, q, std::string(different ? "aliasing" : "single writes") + " of families " + f.id + ", " + g.id);
  if (ans != Answer::Sat) return std::nullopt;
  std::vector<z3::expr> order = a.v.coords;
  order.insert(order.end(), b.v.coords.begin(), b.v.coords.end());
  z3::model model = prove::minimise(q, order);
  Overlap o;
  o.va = model_vars(model, a);
  o.vb = model_vars(model, b);
  o.ka = prove::model_int(model, ka);
  o.kb = prove::model_int(model, kb);
  o.tables = model_tables(e, model);
  o.ma = evaluate_member(plan, f, o.va, o.tables.source, o.tables.target);
  o.mb = evaluate_member(plan, g, o.vb, o.tables.source, o.tables.target);
  const bool ok = o.ma.error.empty() && o.mb.error.empty() && (fi != gi || o.va != o.vb) && o.ka >= 0 && o.ka < o.ma.bytes &&
                  o.kb >= 0 && o.kb < o.mb.bytes && o.ma.target_instance == o.mb.target_instance &&
                  o.ma.target_offset + o.ka == o.mb.target_offset + o.kb;
  o.from_two = f.source.tensor != g.source.tensor || o.ma.source_instance != o.mb.source_instance ||
               o.ma.source_offset + o.ka != o.mb.source_offset + o.kb;
  if (!ok || o.from_two != different)
    throw prove::InternalError("double-write witness " + member_text(f, o.va) + " / " + member_text(g, o.vb) + " does not reproduce");
  return o;
}

std::string overlap_text(const layout::BoundLayout& target, const Family& f, const Family& g, const Overlap& o) {
  const std::string tname = target.tensors[static_cast<std::size_t>(f.target.tensor)].name;
  return member_text(f, o.va) + " byte " + std::to_string(o.ka) + " and " + member_text(g, o.vb) + " byte " + std::to_string(o.kb) +
         " both write " + tname + "[" + std::to_string(o.ma.target_instance) + "] byte " + std::to_string(o.ma.target_offset + o.ka);
}

// Calls ask(fi, gi) for every pair of families on one target tensor that stride separation does not
// already keep apart; stops when ask returns true.
template <typename Ask>
void for_each_pair_to_ask(const FamilyPlan& plan, Ask ask) {
  for (std::size_t fi = 0; fi < plan.families.size(); ++fi)
    for (std::size_t gi = fi; gi < plan.families.size(); ++gi) {
      const Family& f = plan.families[fi];
      const Family& g = plan.families[gi];
      if (f.target.tensor != g.target.tensor) continue;
      if (fi == gi ? affine_distinct(plan, f) : affine_distinct(plan, f, g)) continue;  // proved without the solver
      if (ask(fi, gi)) return;
    }
}

}  // namespace

Finding find_aliased(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan) {
  Finding out;
  for_each_pair_to_ask(plan, [&](std::size_t fi, std::size_t gi) {
    std::optional<Overlap> o = overlap(s, source, target, plan, fi, gi, true, out);
    if (!o) return false;
    const Family& f = plan.families[fi];
    const Family& g = plan.families[gi];
    const std::string msg = overlap_text(target, f, g, *o) + ", from different source bytes";
    const std::string tname = target.tensors[static_cast<std::size_t>(f.target.tensor)].name;
    nlohmann::json cx = {
        {"target", {{"tensor", tname}, {"instance", o->ma.target_instance}, {"byte", o->ma.target_offset + o->ka}}},
        {"first", {{"family", f.id}, {"member", member_json(f, o->va)}, {"byte", o->ka},
                   {"source", {{"instance", o->ma.source_instance}, {"byte", o->ma.source_offset + o->ka}}}}},
        {"second", {{"family", g.id}, {"member", member_json(g, o->vb)}, {"byte", o->kb},
                    {"source", {{"instance", o->mb.source_instance}, {"byte", o->mb.source_offset + o->kb}}}}},
        {"tables", o->tables.read}};
    out.result = found(Verdict::Aliased, msg, cx, {msg, "tables read: " + o->tables.read.dump()});
    return true;
  });
  return out;
}

std::string writes_once(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan) {
  Finding out;
  std::string why;
  for_each_pair_to_ask(plan, [&](std::size_t fi, std::size_t gi) {
    std::optional<Overlap> o = overlap(s, source, target, plan, fi, gi, false, out);
    if (!o) return false;
    why = overlap_text(target, plan.families[fi], plan.families[gi], *o) +
          " from the same source byte (harmless, not ALIASED; tables read: " + o->tables.read.dump() + ")";
    return true;
  });
  if (why.empty() && !out.unknown.empty()) why = "whether every target byte is written once is not decided (" + out.unknown + ")";
  return why;
}

}  // namespace kvlayout::check

// Searches and proofs behind the coverage count (family_witness.hpp): an unwritten position, and the
// proof of the "at" hints. Padding writes are family_padding.cpp's.
#include "check/family_witness.hpp"

#include "check/family_encoding.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/domain_cells.hpp"
#include "layout/view_algebra.hpp"
#include "prove/internal_error.hpp"

namespace kvlayout::check {
namespace {

z3::expr identity_reads(z3::context& c, const prove::Encoder& e) {
  z3::expr all = c.bool_val(true);
  for (const auto& l : e.lookups())
    all = all && l.value == l.entry + c.int_val(static_cast<int64_t>(e.bound().tables[static_cast<std::size_t>(l.table)].first));
  return all;
}

}  // namespace

// One in-scope held position that no member writes (byte 0 of its element), under identity tables: the
// corners of the in-scope cells, each asked of the solver with the tables fixed. Empty when none is found.
std::optional<CheckResult> uncovered_witness(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                             const FamilyPlan& plan, const std::vector<expr::Expr>& predicates) {
  auto boxes = layout::cells(target.coord_extents, predicates);
  if (!boxes) return std::nullopt;
  layout::BlockTables identity = layout::identity_tables(target), source_identity = layout::identity_tables(source);
  z3::context& c = s.ctx();
  int tried = 0;
  for (const auto& box : *boxes) {
    bool in = true;
    for (bool t : box.truth) in = in && t;
    if (!in) continue;
    for (int corner = 0; corner < 2 && tried < 24; ++corner, ++tried) {
      std::vector<std::int64_t> x;
      for (const auto& r : box.ranges) x.push_back(corner ? r.hi : r.lo);
      layout::Location lx = layout::locate(target, x, identity);
      if (lx.placement != layout::Placement::Held) continue;
      const std::int64_t byte = layout::byte_offset(target, lx.address);
      bool written = false, unknown = false;
      for (const Family& f : plan.families) {
        if (f.target.tensor != lx.address.tensor) continue;
        PlanEncoders e(c, source, target, plan);
        SymbolicMember m = symbolic_member(e, f, "a");
        z3::expr k = c.int_const("k");
        prove::Query q(s, "who writes " + layout::format_coordinate(target, x), false);
        q.add(m.box && k >= 0 && k < m.bytes && m.target_instance == c.int_val(static_cast<int64_t>(lx.address.instance)) &&
              m.target_offset + k == c.int_val(static_cast<int64_t>(byte)) && identity_reads(c, e.f) && e.axioms());
        prove::Answer a = q.check();
        written = written || a == prove::Answer::Sat;
        unknown = unknown || a == prove::Answer::Unknown;
      }
      if (written || unknown) continue;
      // Re-check concretely where the members are few enough to evaluate.
      std::int64_t members = 0;
      for (const Family& f : plan.families) members = expr::checked_add(members, f.members);
      std::string how = "no member writes it under identity tables (solver proof)";
      if (members <= kEvaluateMembers) {
        for (const Family& f : plan.families)
          for_each_member(f, [&](const std::vector<std::int64_t>& v) {
            ConcreteMember cm = evaluate_member(plan, f, v, source_identity, identity);
            if (f.target.tensor == lx.address.tensor && cm.target_instance == lx.address.instance && cm.target_offset <= byte &&
                byte < cm.target_offset + cm.bytes)
              throw prove::InternalError("uncovered witness " + layout::format_coordinate(target, x) + " is written by " + member_text(f, v));
            return true;
          });
        how = "no member writes it under identity tables (re-checked on all " + std::to_string(members) + " members)";
      }
      CheckResult r;
      r.verdict = Verdict::Uncovered;
      r.counterexample = {{"position", position_json(target, x, lx)}, {"tables", "identity"}, {"how", how}};
      r.details = {"unwritten: " + position_text(target, x, lx), how};
      return r;
    }
  }
  return std::nullopt;
}

// With every family's "at" hint: for every member byte, the hinted position is in scope and held by the
// target at the element that byte lies in. Then no member byte writes padding. Empty = proved; otherwise why not.
std::string hints_prove_no_padding(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                   const FamilyPlan& plan) {
  z3::context& c = s.ctx();
  const std::int64_t eb = target.element_bytes();
  for (const Family& f : plan.families) {
    if (f.at.empty()) return "family " + f.id + " gives no \"at\" hint";
    PlanEncoders e(c, source, target, plan);
    SymbolicMember m = symbolic_member(e, f, "a");
    z3::expr k = c.int_const("k");
    prove::SymbolicPosition vk{"a", m.v.coords};
    vk.coords.push_back(k);
    prove::SymbolicPosition x{"x", {}};
    for (const auto& a : f.at) x.coords.push_back(e.f.value(a, vk));
    const auto tt = static_cast<std::size_t>(f.target.tensor);
    z3::expr holds = c.bool_val(false);
    for (std::size_t tv = 0; tv < target.tensors[tt].views.size(); ++tv) {
      z3::expr start = e.t.offset(tt, tv, x) * c.int_val(static_cast<int64_t>(eb));
      holds = holds || (e.t.view_domain(tt, tv, x) && e.t.instance(tt, x) == m.target_instance && start <= m.target_offset + k &&
                        m.target_offset + k < start + c.int_val(static_cast<int64_t>(eb)));
    }
    z3::expr good = e.t.in_box(x) && holds;
    if (plan.scope) good = good && e.t.truth(*plan.scope, x);
    prove::Query q(s, "family " + f.id + " writes its hinted positions");
    q.add(m.box && k >= 0 && k < m.bytes && !good && e.axioms());
    prove::Answer a = q.check();
    if (a != prove::Answer::Unsat)
      return "family " + f.id + "'s \"at\" hint " + (a == prove::Answer::Sat ? "does not name" : "could not be shown to name") +
             " the position each byte writes";
  }
  return "";
}

}  // namespace kvlayout::check

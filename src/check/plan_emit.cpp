// Plan emit: the families (plan_emit_families.cpp), then the concrete forms, by reading the families back
// exactly as `plan check` does and evaluating them under the given tables.
#include "check/plan_emit.hpp"

#include <functional>
#include <set>

#include "check/family_plan.hpp"
#include "check/plan_emit_families.hpp"
#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "expr/print.hpp"
#include "layout/bind_expression.hpp"
#include "layout/domain_cells.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

// ---- phase 3: concrete forms ----------------------------------------------------------------------

// Whether `var` occurs in e at all, and whether only in linear positions (sums, products with a literal):
// then the offset steps by a constant when var does.
bool occurs(const expr::Expr& e, int var) {
  if (e->op == expr::Op::Coord) return e->value == var;
  for (const auto& a : e->args)
    if (occurs(a, var)) return true;
  return false;
}

bool only_linear(const expr::Expr& e, int var) {
  using expr::Op;
  switch (e->op) {
    case Op::Literal: case Op::Coord: return true;
    case Op::Add: case Op::Sub: case Op::Neg: {
      for (const auto& a : e->args)
        if (!only_linear(a, var)) return false;
      return true;
    }
    case Op::Mul:
      if (e->args[0]->op == Op::Literal) return only_linear(e->args[1], var);
      if (e->args[1]->op == Op::Literal) return only_linear(e->args[0], var);
      return !occurs(e, var);
    default: return !occurs(e, var);
  }
}

nlohmann::json tables_json(const layout::BoundLayout& b, const layout::BlockTables& t, const std::string& side) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < b.tables.size(); ++i) {
    nlohmann::json entries = nlohmann::json::array();
    for (std::int64_t e = 0; e < b.tables[i].length; ++e) entries.push_back(t.entry(i, e));
    out[side + "." + b.tables[i].name] = entries;
  }
  return out;
}

// Regions at consecutive 4 KiB-aligned offsets from `first`, one per tensor instance in declaration order.
std::vector<std::vector<std::int64_t>> region_bases(const layout::BoundLayout& b, std::int64_t first, nlohmann::json& regions) {
  std::vector<std::vector<std::int64_t>> bases;
  std::int64_t at = first;
  regions = nlohmann::json::array();
  for (const auto& t : b.tensors) {
    bases.emplace_back();
    for (std::int64_t i = 0; i < t.instances; ++i) {
      bases.back().push_back(at);
      regions.push_back({{"tensor", t.name}, {"instance", i}, {"base", at}});
      const std::int64_t bytes = expr::checked_mul(t.size, b.element_bytes());
      at = expr::checked_add(at, expr::checked_mul(expr::ceil_div(bytes, 4096), 4096));
    }
  }
  return bases;
}

template <typename Visit>
void odometer(const Family& f, std::size_t skip, Visit visit) {
  std::vector<std::int64_t> v = f.first;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (f.first[i] >= f.end[i]) return;
  for (;;) {
    visit(v);
    std::size_t i = v.size();
    while (i-- > 0) {
      if (i == skip) continue;
      if (++v[i] < f.end[i]) break;
      v[i] = f.first[i];
    }
    if (i == static_cast<std::size_t>(-1)) return;
  }
}

void concrete(const prove::Proof& proof, const nlohmann::json& families_plan, const PlanEmitOptions& o, nlohmann::json& out) {
  const layout::BoundLayout& S = *proof.source_bound;
  const layout::BoundLayout& T = *proof.target_bound;
  const FamilyPlan fp = read_family_plan(S, T, families_plan, "<emitted plan>");
  const layout::BlockTables ts = o.source_tables.value_or(layout::identity_tables(S));
  const layout::BlockTables tt = o.target_tables.value_or(layout::identity_tables(T));
  nlohmann::json sreg, treg;
  auto sb = region_bases(S, o.source_base, sreg), tb = region_bases(T, o.target_base, treg);
  out["source_regions"] = sreg;
  out["target_regions"] = treg;
  nlohmann::json tables = tables_json(S, ts, "source");
  tables.update(tables_json(T, tt, "target"));
  out["tables"] = tables;
  const bool runs = o.format == PlanFormat::Runs;
  std::int64_t total = 0;
  for (const Family& f : fp.families) total = expr::checked_add(total, f.members);
  if (!runs && total > o.max_descriptors)
    throw spec::SpecError("", "--format", "descriptors: " + std::to_string(total) + " per side, past the limit of " +
                                              std::to_string(o.max_descriptors),
                          "--format runs or families for a plan this large");
  nlohmann::json src = nlohmann::json::array(), dst = nlohmann::json::array();
  auto addr = [](const std::vector<std::vector<std::int64_t>>& bases, int tensor, std::int64_t instance, std::int64_t offset) {
    return expr::checked_add(bases.at(static_cast<std::size_t>(tensor)).at(static_cast<std::size_t>(instance)), offset);
  };
  for (const Family& f : fp.families) {
    // The innermost loop folded into stride/count: the widest variable read by no table and no instance.
    std::size_t fold = f.vars.size();
    if (runs)
      for (std::size_t i = 0; i < f.vars.size(); ++i) {
        const int var = static_cast<int>(i);
        bool free = only_linear(f.source.offset, var) && only_linear(f.target.offset, var) && !occurs(f.source.instance, var) &&
                    !occurs(f.target.instance, var) && !occurs(f.bytes, var) && f.end[i] - f.first[i] > 1;
        if (free && (fold == f.vars.size() || f.end[i] - f.first[i] > f.end[fold] - f.first[fold])) fold = i;
      }
    std::int64_t count = 1, sstride = 0, tstride = 0;
    if (fold < f.vars.size()) {
      std::vector<std::int64_t> a = f.first, b = f.first;
      b[fold] += 1;
      ConcreteMember ma = evaluate_member(fp, f, a, ts, tt), mb = evaluate_member(fp, f, b, ts, tt);
      sstride = mb.source_offset - ma.source_offset;
      tstride = mb.target_offset - ma.target_offset;
      count = f.end[fold] - f.first[fold];
      if (sstride <= 0 || tstride <= 0) fold = f.vars.size(), count = 1;
    }
    odometer(f, fold, [&](const std::vector<std::int64_t>& v) {
      ConcreteMember m = evaluate_member(fp, f, v, ts, tt);
      if (!m.error.empty()) throw std::logic_error("emitted family " + f.id + " does not evaluate: " + m.error);
      const std::int64_t sa = addr(sb, f.source.tensor, m.source_instance, m.source_offset);
      const std::int64_t ta = addr(tb, f.target.tensor, m.target_instance, m.target_offset);
      if (runs) {
        src.push_back({{"addr", sa}, {"len", m.bytes}, {"stride", count > 1 ? sstride : m.bytes}, {"count", count}});
        dst.push_back({{"addr", ta}, {"len", m.bytes}, {"stride", count > 1 ? tstride : m.bytes}, {"count", count}});
      } else {
        src.push_back({sa, m.bytes});
        dst.push_back({ta, m.bytes});
      }
    });
  }
  out[runs ? "source_runs" : "source_descriptors"] = src;
  out[runs ? "target_runs" : "target_descriptors"] = dst;
}

}  // namespace

bool plan_emittable(const prove::Proof& proof) { return emit::emittable(proof.grade, false); }

nlohmann::json emit_plan(const prove::Proof& proof, const PlanEmitOptions& options) {
  if (!plan_emittable(proof)) throw std::logic_error("emit_plan: the proof does not license the move");
  const layout::BoundLayout& S = *proof.source_bound;
  // Only members plan check knows (it rejects others): the pair goes in the comment.
  nlohmann::json out = {{"form", options.format == PlanFormat::Families ? "families" : "descriptors"},
                        {"comment", "kvlayout plan emit " + proof.source_layout->name + " -> " + proof.target_layout->name +
                                        " on " + proof.cache.name + " (" + prove::grade_name(proof.grade) + ")"}};
  std::optional<std::string> scope = options.scope;
  // A SUBSET move writes only what the source holds: say so, so the plan's default scope is not the target's.
  if (!scope && proof.grade == prove::Grade::Subset) {
    const expr::Expr held = layout::held_predicate(S);
    if (held->op != expr::Op::Literal) scope = expr::to_string(held);
  }
  if (scope) out["scope"] = *scope;
  nlohmann::json fam = out;
  fam["form"] = "families";
  fam["families"] = emitted_families(proof, options.scope);
  if (options.format == PlanFormat::Families) return fam;
  concrete(proof, fam, options, out);
  return out;
}

}  // namespace kvlayout::check

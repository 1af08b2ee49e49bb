#include "certificate/ownership_mutation.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <map>
#include <set>

#include "enumerate/group_cross_check.hpp"
#include "expr/print.hpp"
#include "layout/rank_group.hpp"
#include "prove/group.hpp"
#include "spec/error.hpp"

namespace kvlayout::certificate {

using expr::Op;

namespace {

using Params = std::map<std::string, std::int64_t>;

expr::Expr rebuild(const expr::Expr& e, std::vector<expr::Expr> args) {
  return std::make_shared<const expr::Node>(expr::Node{e->op, e->value, e->name, std::move(args)});
}

bool has_name(const expr::Expr& e) {
  if (e->op == Op::Name) return true;
  for (const auto& a : e->args)
    if (has_name(a)) return true;
  return false;
}

bool has_op(const expr::Expr& e, Op op) {
  if (e->op == op) return true;
  for (const auto& a : e->args)
    if (has_op(a, op)) return true;
  return false;
}

// The tree with its first (pre-order) `/` made `%`.
expr::Expr div_to_mod(const expr::Expr& e, bool& done) {
  if (done) return e;
  if (e->op == Op::Div) {
    done = true;
    return expr::make(Op::Mod, e->args);
  }
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(div_to_mod(a, done));
  return rebuild(e, std::move(args));
}

class OwnershipGenerator {
 public:
  explicit OwnershipGenerator(const spec::Layout& family) : family_(family) {
    for (const auto& p : family.params)
      if (has_name(p.value.expr)) derived_[p.name] = p.value.expr;  // a literal default is a value, not a rule
    for (const auto& c : family.content.coords) coords_.insert(c.name);
  }

  std::vector<Mutant> run() {
    if (!spec::is_family(family_) || !family_.holds) return {};
    modulo_owner();
    off_by_one();
    return std::move(out_);
  }

 private:
  void emit(const std::string& kind, const std::string& what, const expr::Expr& holds) {
    auto copy = std::make_shared<spec::Layout>(family_);
    copy->holds = spec::SourceExpr{holds, family_.holds->path, expr::to_string(holds)};
    copy->name = family_.name + "~" + kind + "~" + std::to_string(out_.size());
    out_.push_back({kind, what + ": holds `" + family_.holds->text + "` -> `" + copy->holds->text + "`", copy});
  }

  // The derived parameters the rule reads, directly or through others, in pre-order.
  void reachable(const expr::Expr& e, std::vector<std::string>& order) const {
    if (e->op == Op::Name) {
      auto it = derived_.find(e->name);
      if (it == derived_.end() || std::find(order.begin(), order.end(), e->name) != order.end()) return;
      order.push_back(e->name);
      reachable(it->second, order);
      return;
    }
    for (const auto& a : e->args) reachable(a, order);
  }

  bool depends_on(const std::string& name, const std::string& on) const {
    if (name == on) return true;
    auto it = derived_.find(name);
    if (it == derived_.end()) return false;
    std::function<bool(const expr::Expr&)> walk = [&](const expr::Expr& e) {
      if (e->op == Op::Name && depends_on(e->name, on)) return true;
      for (const auto& a : e->args)
        if (walk(a)) return true;
      return false;
    };
    return walk(it->second);
  }

  // `e` with every parameter that depends on `changed` replaced by its definition, `changed` by `to`.
  expr::Expr inline_through(const expr::Expr& e, const std::string& changed, const expr::Expr& to) const {
    if (e->op == Op::Name) {
      if (e->name == changed) return to;
      auto it = derived_.find(e->name);
      if (it != derived_.end() && depends_on(e->name, changed)) return inline_through(it->second, changed, to);
      return e;
    }
    std::vector<expr::Expr> args;
    for (const auto& a : e->args) args.push_back(inline_through(a, changed, to));
    return rebuild(e, std::move(args));
  }

  void modulo_owner() {
    std::vector<std::string> order;
    reachable(family_.holds->expr, order);
    for (const std::string& p : order) {
      const expr::Expr& def = derived_.at(p);
      if (!has_op(def, Op::Div)) continue;
      bool done = false;
      expr::Expr mutated = div_to_mod(def, done);
      emit("modulo-owner", p + " `" + expr::to_string(def) + "` -> `" + expr::to_string(mutated) + "`, inlined",
           inline_through(family_.holds->expr, p, mutated));
    }
  }

  // A bound on a coordinate: which argument is the coordinate, and whether it bounds from above.
  struct Bound {
    std::string coord;
    std::size_t other;  // the argument that is the bound
    bool upper;
  };
  std::optional<Bound> bound_of(const expr::Expr& e) const {
    if (e->op != Op::Lt && e->op != Op::Le && e->op != Op::Gt && e->op != Op::Ge) return std::nullopt;
    for (std::size_t i = 0; i < 2; ++i) {
      const expr::Expr& a = e->args[i];
      if (a->op != Op::Name || !coords_.count(a->name)) continue;
      const bool less = e->op == Op::Lt || e->op == Op::Le;  // coord < X when the coordinate is on the left
      return Bound{a->name, 1 - i, i == 0 ? less : !less};
    }
    return std::nullopt;
  }

  // `e` with the bounds on `coord` moved by +1: every bound, or the upper ones only.
  expr::Expr move_bounds(const expr::Expr& e, const std::string& coord, bool upper_only) const {
    if (auto b = bound_of(e); b && b->coord == coord && (b->upper || !upper_only)) {
      std::vector<expr::Expr> args = e->args;
      args[b->other] = expr::make(Op::Add, {args[b->other], expr::literal(1)});
      return rebuild(e, std::move(args));
    }
    std::vector<expr::Expr> args;
    for (const auto& a : e->args) args.push_back(move_bounds(a, coord, upper_only));
    return rebuild(e, std::move(args));
  }

  void collect_bounds(const expr::Expr& e, std::vector<std::string>& coords, std::set<std::pair<std::string, bool>>& seen) const {
    if (auto b = bound_of(e)) {
      if (std::find(coords.begin(), coords.end(), b->coord) == coords.end()) coords.push_back(b->coord);
      seen.insert({b->coord, b->upper});
      return;
    }
    for (const auto& a : e->args) collect_bounds(a, coords, seen);
  }

  void off_by_one() {
    std::vector<std::string> coords;
    std::set<std::pair<std::string, bool>> seen;
    collect_bounds(family_.holds->expr, coords, seen);
    for (const std::string& c : coords) {
      if (!seen.count({c, false}) || !seen.count({c, true})) continue;  // a range has both ends
      emit("owner-off-by-one", "the " + c + " range each instance owns shifted by one",
           move_bounds(family_.holds->expr, c, false));
      emit("owner-off-by-one", "the " + c + " range each instance owns widened by one",
           move_bounds(family_.holds->expr, c, true));
    }
  }

  const spec::Layout& family_;
  std::map<std::string, expr::Expr> derived_;
  std::set<std::string> coords_;
  std::vector<Mutant> out_;
};

std::string sizes_text(const Params& p) {
  std::string out;
  for (const auto& [name, value] : p) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return out;
}

// The sizes a mutant is judged at: each rank axis at 2 and at 8 in turn, the others at 2.
std::vector<Params> judging_sizes(const spec::Layout& family) {
  std::vector<Params> out;
  for (std::int64_t s : {2, 8})
    for (const auto& axis : family.ranks) {
      Params p;
      for (const auto& other : family.ranks) p[other.size] = 2;
      p[axis.size] = s;
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  return out;
}

}  // namespace

const std::vector<std::string>& ownership_mutation_kinds() {
  static const std::vector<std::string> kinds = {"modulo-owner", "owner-off-by-one"};
  return kinds;
}

std::vector<Mutant> ownership_mutants(const spec::Layout& family) { return OwnershipGenerator(family).run(); }

OwnershipBaseline ownership_baseline(const std::shared_ptr<const spec::Layout>& family, const spec::CacheShape& small,
                                     const prove::ProveOptions& options) {
  Params ones;
  for (const auto& axis : family->ranks) ones[axis.size] = 1;
  OwnershipBaseline b{family, layout::expand_group(family, small, ones), {}, {}};
  b.whole_enumerated = enumerate::enumerate_group(b.whole, small);
  for (const Params& sizes : judging_sizes(*family)) {
    prove::GroupProof o = prove::prove_group(b.whole, layout::expand_group(family, small, sizes), small, options);
    if (prove::is_exact(o.proof.grade)) b.moves.push_back({sizes, o.proof.grade, o.proof.reason});
  }
  return b;
}

MutantOutcome judge_ownership_mutant(const OwnershipBaseline& b, const Mutant& mutant, const spec::CacheShape& small,
                                     const prove::ProveOptions& options) {
  MutantOutcome out{b.family->name, mutant.layout->name, mutant.kind, mutant.description, "", "", "", "", ""};
  if (b.moves.empty()) {
    out.verdict = "not-cross-checked";
    out.detail = "no size at which the original's whole -> family move is exact on " + small.name;
    return out;
  }
  try {
    for (const auto& original : b.moves) {
      const layout::Group m = layout::expand_group(mutant.layout, small, original.sizes);
      prove::GroupProof g = prove::prove_group(b.whole, m, small, options);
      const std::string move = "whole -> " + mutant.layout->name + " (" + sizes_text(original.sizes) + ")";
      // The group enumeration is the independent witness on every mutant move judged.
      enumerate::EnumeratedGroup me = enumerate::enumerate_group(m, small);
      enumerate::CrossCheck cc = enumerate::cross_check_group(b.whole_enumerated, me);
      if (cc.checked && (cc.grade != g.proof.grade || cc.reason != g.proof.reason)) {
        out.verdict = "disagree";
        out.detail = move + ": group cross-check " + prove::grade_name(cc.grade) + " [" + prove::info(cc.reason).code +
                     "] vs group proof " + prove::grade_name(g.proof.grade) + " [" + prove::info(g.proof.reason).code + "]";
        return out;
      }
      if (g.proof.grade == prove::Grade::Unknown) {
        out.verdict = "unknown";
        out.detail = move + ": " + g.proof.unblocked_by;
        return out;
      }
      if (g.proof.grade == original.grade && g.proof.reason == original.reason) continue;
      out.verdict = "killed";
      out.caught_by = "group grade";
      out.grade = prove::grade_name(g.proof.grade);
      out.reason = prove::info(g.proof.reason).code;
      const prove::ObligationResult* d = g.proof.deciding();
      out.detail = move + ": " + out.grade + " [" + out.reason + "] (the original's: " + prove::grade_name(original.grade) +
                   ")" + (d ? "; " + d->detail : "") +
                   (cc.checked ? "; the group cross-check agrees" : "; not cross-checked: " + cc.not_checked);
      return out;
    }
  } catch (const spec::SpecError& e) {
    out.verdict = "invalid";
    out.detail = e.what();
    return out;
  }
  out.verdict = "survived";
  out.detail = "every whole -> family move graded as the original's";
  return out;
}

MutantOutcome judge_ownership_mutant(const std::shared_ptr<const spec::Layout>& family, const Mutant& mutant,
                                     const spec::CacheShape& small, const prove::ProveOptions& options) {
  return judge_ownership_mutant(ownership_baseline(family, small, options), mutant, small, options);
}

}  // namespace kvlayout::certificate

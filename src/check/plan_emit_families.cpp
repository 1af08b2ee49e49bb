// Plan emit, phase 2 (phase 1, the boxes, is emit_mode_boxes.cpp's): per box, the loop modes that vary
// become `over` variables, the side forms become byte-offset expressions, and the "at" hint names each
// member byte's position (plan check proves it, never trusts it).
#include "check/plan_emit_families.hpp"

#include "check/emit_mode_boxes.hpp"
#include "emit/plan.hpp"
#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "expr/print.hpp"
#include "layout/bind_expression.hpp"
#include "layout/domain_cells.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

using namespace emit_boxes;

struct Names {
  std::vector<std::string> var;     // per mode: its over variable, or empty when fixed in this box
  std::vector<std::int64_t> fixed;  // per mode: the value when fixed
};

expr::Expr term(const Names& n, int mode) {
  const auto m = static_cast<std::size_t>(mode);
  return n.var[m].empty() ? expr::literal(n.fixed[m]) : expr::coord(mode, n.var[m]);
}

// An atom's expression with modes replaced by variables or constants and lookups named `side.TABLE`.
expr::Expr rename(const expr::Expr& e, const Names& n, const std::string& side) {
  if (e->op == expr::Op::Coord) return term(n, static_cast<int>(e->value));
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(rename(a, n, side));
  std::string name = e->op == expr::Op::Lookup ? side + "." + e->name : e->name;
  return expr::fold(std::make_shared<const expr::Node>(expr::Node{e->op, e->value, name, std::move(args)}));
}

expr::Expr plus(expr::Expr a, expr::Expr b) {
  if (a->op == expr::Op::Literal && a->value == 0) return b;
  return expr::make(expr::Op::Add, {std::move(a), std::move(b)});
}
expr::Expr times(std::int64_t c, expr::Expr e) {
  if (c == 1) return e;
  return expr::make(expr::Op::Mul, {expr::literal(c), std::move(e)});
}

// The side's byte offset at the start of a member: the run's modes are 0 there.
std::string byte_offset_text(const emit::SideForm& f, const std::vector<bool>& in_run, const Names& n, std::int64_t eb,
                             const std::string& side) {
  expr::Expr sum = expr::literal(0);
  std::int64_t constant = expr::checked_mul(f.constant, eb);
  for (std::size_t m = 0; m < f.stride.size(); ++m) {
    if (in_run[m] || f.stride[m] == 0) continue;
    const std::int64_t s = expr::checked_mul(f.stride[m], eb);
    if (n.var[m].empty()) constant = expr::checked_add(constant, expr::checked_mul(s, n.fixed[m]));
    else sum = plus(sum, times(s, term(n, static_cast<int>(m))));
  }
  for (const auto& a : f.atoms) sum = plus(sum, times(expr::checked_mul(a.coef, eb), rename(a.e, n, side)));
  if (constant != 0 || (sum->op == expr::Op::Literal)) sum = plus(sum, expr::literal(constant));
  return expr::to_string(expr::fold(sum));
}

std::string instance_text(const emit::Cell& cell, const emit::SideForm& f, const Names& n) {
  if (f.instance_coord < 0) return "0";
  const auto& cc = cell.coords[static_cast<std::size_t>(f.instance_coord)];
  expr::Expr sum = expr::literal(coordinate_base(cell, cc) - f.instance_coord_first);  // instance = coord - per_range FIRST
  for (int m : cc.modes) sum = plus(sum, times(cell.modes[static_cast<std::size_t>(m)].weight, term(n, m)));
  return expr::to_string(expr::fold(sum));
}

nlohmann::json family_json(const emit::Cell& cell, const ModeBox& box, const prove::Proof& proof, const std::string& id) {
  const layout::BoundLayout& S = *proof.source_bound;
  const layout::BoundLayout& T = *proof.target_bound;
  // The run stays whole only while each of its coordinates spans its whole cell range in this box.
  std::vector<bool> in_run(cell.modes.size(), false);
  std::int64_t run_elements = 1;
  for (int m : cell.run) {
    const auto& mode = cell.modes[static_cast<std::size_t>(m)];
    const auto& cc = cell.coords[static_cast<std::size_t>(mode.coord)];
    bool whole = true;
    for (int d : cc.modes)
      whole = whole && box[static_cast<std::size_t>(d)] == Range{0, cell.modes[static_cast<std::size_t>(d)].extent};
    if (!whole) break;
    in_run[static_cast<std::size_t>(m)] = true;
    run_elements = expr::checked_mul(run_elements, mode.extent);
  }
  Names n{std::vector<std::string>(cell.modes.size()), std::vector<std::int64_t>(cell.modes.size(), 0)};
  nlohmann::json over = nlohmann::json::object();
  for (std::size_t m = 0; m < cell.modes.size(); ++m) {
    if (in_run[m]) continue;
    if (box[m].second - box[m].first == 1) {
      n.fixed[m] = box[m].first;
      continue;
    }
    n.var[m] = cell.modes[m].var;
    over[n.var[m]] = box[m].first == 0 ? nlohmann::json(box[m].second) : nlohmann::json::array({box[m].first, box[m].second});
  }
  const std::int64_t eb = S.element_bytes();
  // The "at" hint: each coordinate from the variables, the fixed digits and, for the run's modes, the
  // element within the run (byte / element bytes) in mixed radix. plan check proves it, never trusts it.
  std::vector<expr::Expr> digit(cell.modes.size());
  std::int64_t below = 1;
  for (int m : cell.run) {
    const auto mi = static_cast<std::size_t>(m);
    if (!in_run[mi]) break;
    expr::Expr e = expr::make(expr::Op::Div, {expr::coord(0, "byte"), expr::literal(expr::checked_mul(eb, below))});
    digit[mi] = expr::make(expr::Op::Mod, {e, expr::literal(cell.modes[mi].extent)});
    below = expr::checked_mul(below, cell.modes[mi].extent);
  }
  nlohmann::json at = nlohmann::json::object();
  for (const auto& cc : cell.coords) {
    expr::Expr sum = expr::literal(coordinate_base(cell, cc));
    for (int m : cc.modes) {
      const auto mi = static_cast<std::size_t>(m);
      sum = plus(sum, times(cell.modes[mi].weight, in_run[mi] ? digit[mi] : term(n, m)));
    }
    at[cc.name] = expr::to_string(expr::fold(sum));
  }
  return {{"id", id},
          {"at", at},
          {"over", over},
          {"source", {{"tensor", S.tensors[static_cast<std::size_t>(cell.source.tensor)].name},
                      {"instance", instance_text(cell, cell.source, n)},
                      {"offset", byte_offset_text(cell.source, in_run, n, eb, "source")}}},
          {"target", {{"tensor", T.tensors[static_cast<std::size_t>(cell.target.tensor)].name},
                      {"instance", instance_text(cell, cell.target, n)},
                      {"offset", byte_offset_text(cell.target, in_run, n, eb, "target")}}},
          {"bytes", std::to_string(expr::checked_mul(run_elements, eb))}};
}

}  // namespace

nlohmann::json emitted_families(const prove::Proof& proof, const std::optional<std::string>& scope) {
  const emit::Plan plan = emit::make_plan(*proof.source_bound, *proof.target_bound);
  nlohmann::json families = nlohmann::json::array();
  for (const auto& ranges : scope_boxes(*proof.target_bound, scope))
    for (std::size_t c = 0; c < plan.cells.size(); ++c) {
      std::vector<ModeBox> boxes = boxes_of(plan.cells[c], ranges);
      for (std::size_t b = 0; b < boxes.size(); ++b)
        families.push_back(family_json(plan.cells[c], boxes[b], proof, "c" + std::to_string(c) + "." + std::to_string(families.size())));
    }
  return families;
}


}  // namespace kvlayout::check

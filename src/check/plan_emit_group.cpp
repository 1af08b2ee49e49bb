#include "check/plan_emit_group.hpp"

namespace kvlayout::check {
namespace {

// "layer >= 0 && layer < 80 && head >= 4 && head < 8": the assignment's box, or nullopt without one.
std::optional<std::string> box_scope(const prove::RankAssignment& a) {
  std::string box;
  auto bound = [&](const std::string& coord, const std::optional<prove::RankRange>& r) {
    if (!r) return;
    box += (box.empty() ? "" : " && ") + coord + " >= " + std::to_string(r->first) + " && " + coord + " < " +
           std::to_string(r->end);
  };
  bound("layer", a.layers);
  bound("head", a.heads);
  if (box.empty()) return std::nullopt;
  return box;
}

}  // namespace

nlohmann::ordered_json emit_group_plans(const prove::GroupProof& g, const std::vector<emit::GroupPiece>& pieces,
                                        const std::function<PlanEmitOptions(const prove::Proof&)>& options_for) {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const emit::GroupPiece& p : pieces) {
    nlohmann::ordered_json entry = emit::piece_json(g, p);
    PlanEmitOptions o = options_for(p.proof);
    // A SUBSET piece moves only its box: say so as the plan's scope (emit_plan would otherwise state the
    // source instance's whole held set, which is wider than this rank pair's move).
    if (!o.scope && p.proof.grade == prove::Grade::Subset) o.scope = box_scope(p.assignment);
    entry["plan"] = emit_plan(p.proof, o);
    plans.push_back(std::move(entry));
  }
  return {{"comment", "kvlayout plan emit " + g.source.title() + " -> " + g.target.title() + " on " + g.proof.cache.name +
                          " (" + prove::grade_name(g.proof.grade) + "): one plan per rank pair; each is a plan of "
                          "source_layout -> piece (target_layout restricted to heads and layers)"},
          {"source_group", emit::group_summary_json(g.source)},
          {"target_group", emit::group_summary_json(g.target)},
          {"cache", g.proof.cache.name},
          {"grade", prove::grade_name(g.proof.grade)},
          {"plans", plans}};
}

}  // namespace kvlayout::check

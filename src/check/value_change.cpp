// VALUE_CHANGE, shared by the concrete forms (plan_descriptors.hpp): a byte copy between layouts whose
// element types or quantisation scales differ changes every value, whatever it copies.
#include "check/plan_descriptors.hpp"

#include "check/plan_scope.hpp"
#include "layout/address.hpp"
#include "spec/dtype.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

std::string scale_text(const spec::Layout& l) {
  if (!l.scale) return spec::dtype_name(l.dtype) + ", no scale";
  std::string per;
  for (const auto& p : l.scale->per) per += (per.empty() ? "" : ", ") + p;
  return spec::dtype_name(l.dtype) + " with an " + spec::dtype_name(l.scale->dtype) + " scale per (" + per + ")";
}

bool same_values(const spec::Layout& a, const spec::Layout& b) {
  if (a.dtype != b.dtype) return false;
  if (!a.scale || !b.scale) return !a.scale && !b.scale;
  return a.scale->dtype == b.scale->dtype && a.scale->per == b.scale->per;
}

}  // namespace

std::optional<CheckResult> value_change(const layout::BoundLayout& S, const layout::BoundLayout& T, const std::string& file) {
  if (S.coord_names != T.coord_names)
    throw spec::SpecError(file, "", S.layout->name + " and " + T.layout->name + " hold different content",
                          "a source and a target of one content");
  if (same_values(*S.layout, *T.layout)) return std::nullopt;
  CheckResult out;
  out.verdict = Verdict::ValueChange;
  out.message = S.layout->name + " stores " + scale_text(*S.layout) + "; " + T.layout->name + " stores " + scale_text(*T.layout) +
                ": a byte copy changes values";
  out.counterexample = {{"source_dtype", spec::dtype_name(S.layout->dtype)}, {"target_dtype", spec::dtype_name(T.layout->dtype)},
                        {"source_scale", S.layout->scale ? scale_text(*S.layout) : "none"},
                        {"target_scale", T.layout->scale ? scale_text(*T.layout) : "none"}};
  // A position both hold, at its two addresses (none when the pair has no run structure).
  emit::Plan plan;
  try {
    plan = emit::make_plan(S, T);
  } catch (const emit::EmitError&) {
  }
  if (!plan.cells.empty()) {
    std::vector<std::int64_t> coord;
    for (const auto& cc : plan.cells[0].coords) coord.push_back(cc.lo);
    const auto ts = layout::identity_tables(S), tt = layout::identity_tables(T);
    const auto ls = layout::locate(S, coord, ts), lt = layout::locate(T, coord, tt);
    if (ls.placement != layout::Placement::Held || lt.placement != layout::Placement::Held)
      throw std::logic_error("plan check: VALUE_CHANGE position is not held by both sides (does not reproduce)");
    out.counterexample["source"] = position_json(S, coord, ls);
    out.counterexample["target"] = position_json(T, coord, lt);
    out.details = {"source: " + position_text(S, coord, ls) + " as " + spec::dtype_name(S.layout->dtype),
                   "target: " + position_text(T, coord, lt) + " as " + spec::dtype_name(T.layout->dtype)};
  }
  return out;
}

}  // namespace kvlayout::check

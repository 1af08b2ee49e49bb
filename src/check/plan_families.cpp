// The families form of `plan check`: read and bind the families, then ask, in order, value change (no
// solver), in-bounds, aliasing (from different source bytes), mapping, scope, and coverage by counting
// (which needs every byte written once: a same-source duplicate is harmless but leaves it to witnesses). Every question is for all
// values of the variables and all block tables; nothing enumerates the members.
#include "check/plan_families.hpp"

#include <chrono>

#include "check/family_checks.hpp"
#include "check/family_plan.hpp"
#include "expr/arithmetic.hpp"
#include "prove/session.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

std::string value_change(const layout::BoundLayout& a, const layout::BoundLayout& b) {
  const spec::Layout& la = *a.layout;
  const spec::Layout& lb = *b.layout;
  if (la.dtype != lb.dtype)
    return "element types differ: the source holds " + spec::dtype_name(la.dtype) + ", the target " + spec::dtype_name(lb.dtype);
  bool same_scale = (!la.scale && !lb.scale) ||
                    (la.scale && lb.scale && la.scale->dtype == lb.scale->dtype && la.scale->per == lb.scale->per);
  if (!same_scale) return "quantisation scales differ";
  return "";
}

}  // namespace

CheckResult check_family_plan(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                              const std::string& file, const prove::ProveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto finish = [&](CheckResult r) {
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  if (source.coord_names != target.coord_names || source.coord_extents != target.coord_extents)
    throw spec::SpecError(file, "", source.layout->name + " and " + target.layout->name + " hold different content or extents",
                          "a plan between two layouts of one content on one cache shape");
  CheckResult r;
  if (std::string d = value_change(source, target); !d.empty()) {
    r.verdict = Verdict::ValueChange;
    r.message = d;
    r.counterexample = {{"source_dtype", spec::dtype_name(source.layout->dtype)}, {"target_dtype", spec::dtype_name(target.layout->dtype)}};
    r.details = {d + "; a byte copy changes every value"};
    return finish(r);
  }
  FamilyPlan fp = read_family_plan(source, target, plan, file);
  std::int64_t members = 0;
  try {
    for (const Family& f : fp.families) members = expr::checked_add(members, f.members);
  } catch (const expr::ArithmeticError&) {
    throw spec::SpecError(file, "/families", "more than 2^63 members in all", "families whose member counts add up within 64 bits");
  }
  r.checked_descriptors = members;
  prove::Session session(options, "plan " + source.layout->name + " -> " + target.layout->name + " on " + target.cache.name,
                         "plan__" + source.layout->name + "__" + target.layout->name + "__" + target.cache.name);
  std::string unknown;
  using Question = Finding (*)(prove::Session&, const layout::BoundLayout&, const layout::BoundLayout&, const FamilyPlan&);
  struct Step {
    const char* name;
    Question ask;
  };
  for (const Step& step : {Step{"in-bounds", find_out_of_bounds}, Step{"aliased", find_aliased}, Step{"maps", find_wrong_mapping},
                           Step{"in-scope", find_frame_held}}) {
    const auto t0 = std::chrono::steady_clock::now();
    Finding f = step.ask(session, source, target, fp);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (f.result) {
      f.result->steps = r.steps;
      f.result->steps.push_back({step.name, "refuted", f.result->message, ms});
      f.result->checked_descriptors = members;
      return finish(*f.result);
    }
    r.steps.push_back({step.name, f.unknown.empty() ? "proved" : "unknown", f.unknown, ms});
    if (unknown.empty()) unknown = f.unknown;
    // Later questions evaluate members and assume each is defined and in bounds: stop here.
    if (!unknown.empty() && step.ask == find_out_of_bounds) break;
  }
  // Counting needs every earlier question answered.
  if (unknown.empty()) {
    Finding sound = check_target_sound(session, target);
    if (!sound.unknown.empty()) unknown = sound.unknown;
  }
  if (unknown.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t written = 0;
    const std::string not_once = writes_once(session, source, target, fp);
    Finding f = count_coverage(session, source, target, fp, not_once, written);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.checked_bytes = written;
    if (f.result) {
      f.result->steps = r.steps;
      f.result->steps.push_back({"covers", "refuted", f.result->message, ms});
      f.result->checked_descriptors = members;
      f.result->checked_bytes = written;
      return finish(*f.result);
    }
    r.steps.push_back({"covers", f.unknown.empty() ? "proved" : "unknown", f.unknown, ms});
    unknown = f.unknown;
  }
  if (!unknown.empty()) {
    r.verdict = Verdict::Unknown;
    r.message = unknown;
    r.counterexample = nullptr;
    return finish(r);
  }
  r.verdict = Verdict::Ok;
  r.message = std::to_string(fp.families.size()) + " famil" + (fp.families.size() == 1 ? "y" : "ies") + ", " +
              std::to_string(members) + " member(s), " + std::to_string(r.checked_bytes.value_or(0)) +
              " byte(s): every written byte is the right byte of the right position, once, in scope, and every in-scope "
              "byte is written (for every block table)";
  r.counterexample = nullptr;
  return finish(r);
}

}  // namespace kvlayout::check

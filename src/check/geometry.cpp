// The geometry check: a declaration bound to a cache shape against the tensors a connector really holds
// (a dump of shape, stride, storage offset, dtype, sizes and data_ptr per tensor instance). The phases:
// each record against its declared view (geometry_record.cpp), the records' allocations against the
// declared instances (geometry_sharing.cpp: overlaps, every instance present). No solver: every declared
// value is concrete after bind and recomputed through the view algebra before it is compared or shown.
#include <chrono>

#include "check/geometry.hpp"
#include "check/geometry_mismatch.hpp"

namespace kvlayout::check {
namespace {

using geometry_detail::Mismatch;

// How many mismatches the report lists (the first is the verdict's counterexample).
constexpr std::size_t kListed = 20;

std::string line(const Mismatch& m) {
  std::string where = m.record;
  if (m.instance && m.record != "/tensors")
    where += " (" + m.tensor + (m.view ? "." + *m.view : "") + " instance " + std::to_string(*m.instance) + ")";
  return where + ": " + m.text;
}

nlohmann::json counterexample(const TensorDump& dump, const Mismatch& m) {
  nlohmann::json c = {{"file", dump.file}, {"record", m.record}, {"tensor", m.tensor}, {"field", m.field},
                      {"declared", m.declared}, {"observed", m.observed}};
  c["instance"] = m.instance ? nlohmann::json(*m.instance) : nlohmann::json();
  if (m.view) c["view"] = *m.view;
  c["axis"] = m.axis ? nlohmann::json(*m.axis) : nlohmann::json();
  if (!m.axis_expr.empty()) c["axis_expr"] = m.axis_expr;
  for (auto it = m.extra.begin(); it != m.extra.end(); ++it) c[it.key()] = it.value();
  return c;
}

}  // namespace

CheckResult check_geometry(const layout::BoundLayout& bound, const TensorDump& dump) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<Mismatch> found;
  std::vector<std::optional<geometry_detail::Target>> targets;
  for (const TensorRecord& r : dump.records) targets.push_back(geometry_detail::compare_record(bound, r, found));
  geometry_detail::compare_sharing(bound, dump, targets, found);
  geometry_detail::compare_coverage(bound, dump, targets, found);

  CheckResult result;
  std::int64_t instances = 0;
  for (const auto& t : bound.tensors) instances += t.instances;
  const std::string counts = std::to_string(dump.records.size()) + " record(s) of " + dump.file + " against " +
                             std::to_string(instances) + " declared tensor instance(s) of " + bound.layout->name +
                             " on " + bound.cache.name;
  CheckStep step{"geometry", found.empty() ? "proved" : "refuted", counts, 0};
  if (found.empty()) {
    result.verdict = Verdict::Ok;
    result.message = "every record matches its declared tensor instance: " + counts;
  } else {
    result.verdict = Verdict::GeometryMismatch;
    result.message = line(found.front());
    result.counterexample = counterexample(dump, found.front());
    for (std::size_t i = 0; i < found.size() && i < kListed; ++i) result.details.push_back(line(found[i]));
    if (found.size() > kListed) result.details.push_back("... and " + std::to_string(found.size() - kListed) + " more");
    step.detail = std::to_string(found.size()) + " mismatch(es) in " + counts;
  }
  result.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  step.ms = result.ms;
  result.steps.push_back(step);
  return result;
}

}  // namespace kvlayout::check

// The descriptors form of plan check (plan_descriptors.hpp): relocate every copy (descriptor_copies.hpp),
// compare with the expected move by run arithmetic (plan_compare.hpp), and turn the comparison into the
// first verdict that applies, with re-checked counterexamples. VALUE_CHANGE is value_change.cpp's.
#include "check/plan_descriptors.hpp"

#include <algorithm>

#include "check/descriptor_copies.hpp"
#include "check/plan_compare.hpp"
#include "check/plan_json.hpp"
#include "check/plan_scope.hpp"
#include "layout/address.hpp"
#include "spec/dtype.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

using namespace descriptor_copies;

// Phase: the verdict from the comparison, by precedence, with re-checked counterexamples.
CheckResult verdict_of(const Comparison& cmp, const ExpectedMove& move, const PlanSetting& s, const DescriptorPlan& p,
                       const std::vector<Region>& sr, const std::vector<Region>& tr, const std::string& file) {
  CheckResult out;
  const auto& S = s.source;
  const auto& T = s.target;
  if (cmp.aliased) {
    const auto& a = *cmp.aliased;
    const ByteContent at = target_content(s, move, a.dst);
    const ByteContent qa = source_content(s, move, a.src_a), qb = source_content(s, move, a.src_b);
    const Copy ca = find_copy(p, sr, tr, s, a.dst, a.src_a, file), cb = find_copy(p, sr, tr, s, a.dst, a.src_b, file);
    out.verdict = Verdict::Aliased;
    out.message = "one target byte is written twice, from different source bytes: " + content_text(T, at);
    out.counterexample = {{"destination", content_json(T, at)}, {"first", copy_json(ca)}, {"first_source", content_json(S, qa)},
                          {"second", copy_json(cb)}, {"second_source", content_json(S, qb)}};
    out.details = {"target: " + content_text(T, at), "written by " + ca.name + " from " + content_text(S, qa),
                   "and by " + cb.name + " from " + content_text(S, qb)};
    return out;
  }
  if (cmp.wrong) {
    const auto& w = *cmp.wrong;
    const ByteContent P = target_content(s, move, w.dst);
    const ByteContent Q = source_content(s, move, w.src);
    const layout::Location expected = layout::locate(S, P.coord, s.source_tables);
    if (expected.placement != layout::Placement::Held ||
        line_byte(s.source_line, S, expected) + P.byte_in_element == w.src)
      throw std::logic_error("plan check: WRONG_MAPPING counterexample does not reproduce");
    const Copy c = find_copy(p, sr, tr, s, w.dst, w.src, file);
    out.verdict = Verdict::WrongMapping;
    out.message = "the plan writes " + layout::format_coordinate(T, P.coord) + " of " + T.layout->name + " with " +
                  (Q.kind == ByteContent::Kind::Position ? "the bytes of " + layout::format_coordinate(S, Q.coord)
                                                         : std::string("bytes that hold no position of ") + S.layout->name);
    out.counterexample = {{"destination", content_json(T, P)}, {"source", content_json(S, Q)},
                          {"expected_source", position_json(S, P.coord, expected)}, {"copy", copy_json(c)}};
    out.details = {"target " + hex(c.dst) + ": " + content_text(T, P), "receives source " + hex(c.src) + ": " + content_text(S, Q),
                   "expected: " + position_text(S, P.coord, expected), "written by " + c.name};
    return out;
  }
  if (cmp.outside) {
    const auto& o = *cmp.outside;
    const ByteContent P = target_content(s, move, o.dst);
    const ByteContent Q = source_content(s, move, o.src);
    const Copy c = find_copy(p, sr, tr, s, o.dst, o.src, file);
    const bool held_in_scope = P.kind == ByteContent::Kind::Position && in_scope(s.scope, P.coord, T, s.target_tables);
    out.verdict = held_in_scope ? Verdict::WrongMapping : Verdict::FrameViolation;
    out.message = held_in_scope
                      ? "the plan writes " + layout::format_coordinate(T, P.coord) + ", which " + S.layout->name + " does not hold"
                      : "the plan writes outside the scope: " + content_text(T, P);
    out.counterexample = {{"destination", content_json(T, P)}, {"source", content_json(S, Q)}, {"copy", copy_json(c)},
                          {"in_scope", held_in_scope}};
    out.details = {"target " + hex(c.dst) + ": " + content_text(T, P), "receives source " + hex(c.src) + ": " + content_text(S, Q),
                   "written by " + c.name};
    return out;
  }
  return out;  // Ok: the caller decides UNCOVERED
}

CheckResult counted(CheckResult r, std::int64_t descriptors) {
  r.checked_descriptors = descriptors;
  r.checked_bytes = 0;
  return r;
}

std::string ranges_text(const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges) {
  std::string out;
  for (std::size_t i = 0; i < ranges.size() && i < 8; ++i)
    out += (i ? ", " : "") + std::to_string(ranges[i].first) + (ranges[i].second > ranges[i].first ? ".." + std::to_string(ranges[i].second) : "");
  if (ranges.size() > 8) out += ", ... (" + std::to_string(ranges.size()) + " ranges)";
  return out;
}

CheckResult uncovered(const Comparison& cmp, const ExpectedMove& move, const PlanSetting& s) {
  CheckResult out;
  out.verdict = Verdict::Uncovered;
  const auto& T = s.target;
  std::vector<std::int64_t> coord;
  if (cmp.uncovered_sample) coord = position_at(move, T, move.runs[cmp.uncovered_sample->first], cmp.uncovered_sample->second);
  else coord = move.missing_sample;
  const layout::Location loc = layout::locate(T, coord, s.target_tables);
  if (loc.placement != layout::Placement::Held || !in_scope(s.scope, coord, T, s.target_tables))
    throw std::logic_error("plan check: UNCOVERED sample is not an in-scope held position (does not reproduce)");
  const std::int64_t total = cmp.uncovered + move.missing;
  const int token = T.coord_index("token");
  out.message = std::to_string(total) + " in-scope position(s) of " + T.layout->name + " never written";
  if (token >= 0 && !cmp.uncovered_ranges.empty()) out.message += " (tokens " + ranges_text(cmp.uncovered_ranges) + ")";
  out.counterexample = {{"count", total}, {"position", position_json(T, coord, loc)}};
  if (token >= 0) {
    nlohmann::json r = nlohmann::json::array();
    for (const auto& [a, b] : cmp.uncovered_ranges) r.push_back({a, b});
    out.counterexample["token_ranges"] = r;
  }
  if (move.missing > 0) out.counterexample["not_held_by_source"] = move.missing;
  out.details = {"e.g. " + position_text(T, coord, loc)};
  if (move.missing > 0)
    out.details.push_back(std::to_string(move.missing) + " of them are positions " + s.source.layout->name +
                          " does not hold (narrow the scope)");
  return out;
}

}  // namespace

CheckResult check_descriptor_plan(const layout::BoundLayout& S, const layout::BoundLayout& T, const nlohmann::json& plan,
                                  const std::string& file, const prove::ProveOptions& options) {
  const DescriptorPlan p = read_descriptor_plan(S, T, plan, file);
  PlanSetting s{S, T, {}, {}, read_scope(T, plan, file), storage_line(S), storage_line(T), options};
  read_tables(S, T, plan, file, s.source_tables, s.target_tables);
  const std::int64_t n = copy_count(p);
  // Records cost 32 bytes each: past this count a concrete check would not fit in memory.
  constexpr std::int64_t kMaxCopies = std::int64_t{1} << 27;
  if (n > kMaxCopies)
    throw spec::SpecError(file, p.has_transfers ? "/transfers" : "/" + p.source->member, std::to_string(n) + " copies",
                          "at most " + std::to_string(kMaxCopies) + " copies in a concrete plan (state larger plans as families)");
  // Every pair's lengths are checked (bad input) before any verdict.
  for (std::int64_t k = 0; k < n && !p.has_transfers; ++k) (void)copy_at(p, k, file, false);
  if (auto v = value_change(S, T, file)) return counted(*v, n);
  // Phase: relocate every copy; the first address outside its region or tensor is OUT_OF_BOUNDS.
  const std::vector<Region> sr = sorted_by_base(p.source_regions), tr = sorted_by_base(p.target_regions);
  std::vector<PlanRecord> records;
  records.reserve(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const Copy c = copy_at(p, k, file, false);
    const Relocated rs = relocate(sr, s.source_line, c.src, c.len);
    if (!rs.ok) return counted(out_of_bounds(copy_at(p, k, file, true), true, rs, S), n);
    const Relocated rt = relocate(tr, s.target_line, c.dst, c.len);
    if (!rt.ok) return counted(out_of_bounds(copy_at(p, k, file, true), false, rt, T), n);
    // Adjacent copies that continue in both lines are one record (a strided run of back-to-back descriptors).
    if (!records.empty() && records.back().dst + records.back().len == rt.at && records.back().src + records.back().len == rs.at) {
      records.back().len += c.len;
      continue;
    }
    records.push_back({rt.at, rs.at, c.len, k});
  }
  ExpectedMove move;
  try {
    move = expected_move(S, T, s.source_tables, s.target_tables, s.scope, s.source_line, s.target_line);
  } catch (const emit::EmitError& e) {
    CheckResult out;
    out.verdict = Verdict::Unknown;
    out.message = std::string("cannot derive the runs of this pair: ") + e.what();
    out.checked_descriptors = n;
    out.checked_bytes = 0;
    return out;
  }
  const Comparison cmp = compare(records, move, s.target_line.element_bytes, T.coord_index("token"));
  CheckResult out = verdict_of(cmp, move, s, p, sr, tr, file);
  if (out.verdict == Verdict::Ok && (cmp.uncovered > 0 || move.missing > 0)) out = uncovered(cmp, move, s);
  if (out.verdict == Verdict::Ok)
    out.message = "every in-scope position of " + T.layout->name + " (" + std::to_string(move.positions) +
                  ") receives its own bytes from " + S.layout->name + "; nothing else is written";
  out.checked_descriptors = n;
  out.checked_bytes = cmp.written;
  return out;
}

}  // namespace kvlayout::check

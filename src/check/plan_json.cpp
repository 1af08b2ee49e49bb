// The top of a descriptors plan (plan_json.hpp): its members, then regions (plan_regions.cpp), the two
// lists (plan_descriptor_lists.cpp), and either `transfers` or the `pairs` between the lists. Scalars are
// plan_json_values.cpp's, tables and scope plan_json_tables.cpp's.
#include "check/plan_json.hpp"

#include "check/plan_json_util.hpp"
#include "check/plan_top_level.hpp"

namespace kvlayout::check {

using namespace plan_json_util;

DescriptorPlan read_descriptor_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                    const nlohmann::json& plan, const std::string& file) {
  ignore_unknown_top_level(plan, {"form", "source_regions", "target_regions", "source_descriptors", "target_descriptors",
                                  "source_runs", "target_runs", "pairs", "transfers", "tables", "scope", "comment", "request"},
                           file);
  DescriptorPlan out;
  out.source_regions = read_regions(source, plan, "source_regions", file);
  out.target_regions = read_regions(target, plan, "target_regions", file);
  out.source = read_list(plan, "source", file);
  out.target = read_list(plan, "target", file);
  const nlohmann::json* transfers = member(plan, "transfers");
  if (transfers) {
    if (out.source || out.target || member(plan, "pairs"))
      fail(file, "/transfers", *transfers, "either transfers or descriptor lists (with pairs), not both");
    if (!transfers->is_array()) fail(file, "/transfers", *transfers, "an array of {\"src\", \"dst\", \"len\"}");
    out.has_transfers = true;
    out.transfers.reserve(transfers->size());
    for (std::size_t i = 0; i < transfers->size(); ++i) {
      const nlohmann::json& t = (*transfers)[i];
      const std::string p = "/transfers/" + std::to_string(i);
      PairedCopy c;
      c.index = static_cast<std::int64_t>(i);
      if (t.is_array() && t.size() == 3) {
        c.src = read_address(t[0], file, p + "/0");
        c.dst = read_address(t[1], file, p + "/1");
        c.len = read_count(t[2], file, p + "/2", true);
      } else if (t.is_object() && member(t, "src") && member(t, "dst") && member(t, "len")) {
        allow_only(t, {"src", "dst", "len"}, file, p);
        c.src = read_address(t["src"], file, p + "/src");
        c.dst = read_address(t["dst"], file, p + "/dst");
        c.len = read_count(t["len"], file, p + "/len", true);
      } else {
        fail(file, p, t, "a transfer {\"src\", \"dst\", \"len\"} or [src, dst, len]");
      }
      out.transfers.push_back(c);
    }
    return out;
  }
  if (!out.source || !out.target)
    fail(file, out.source ? "/target_descriptors" : "/source_descriptors", nlohmann::json(nullptr),
         "descriptor lists for both sides (<side>_descriptors or <side>_runs), or transfers");
  const nlohmann::json* pairs = member(plan, "pairs");
  if (!pairs) {
    if (out.source->size() != out.target->size())
      throw spec::SpecError(file, "/" + out.target->member,
                            std::to_string(out.target->size()) + " target descriptor(s) against " +
                                std::to_string(out.source->size()) + " source descriptor(s)",
                            "lists of equal length (without \"pairs\", descriptors pair by position)");
    return out;
  }
  if (!pairs->is_array()) fail(file, "/pairs", *pairs, "an array of [source index, target index]");
  std::vector<std::pair<std::int64_t, std::int64_t>> ps;
  ps.reserve(pairs->size());
  for (std::size_t i = 0; i < pairs->size(); ++i) {
    const nlohmann::json& p = (*pairs)[i];
    const std::string at = "/pairs/" + std::to_string(i);
    if (!p.is_array() || p.size() != 2) fail(file, at, p, "[source index, target index]");
    std::int64_t s = read_count(p[0], file, at + "/0", false), t = read_count(p[1], file, at + "/1", false);
    if (s >= out.source->size()) fail(file, at + "/0", p[0], "an index below " + std::to_string(out.source->size()) + " (the source descriptors)");
    if (t >= out.target->size()) fail(file, at + "/1", p[1], "an index below " + std::to_string(out.target->size()) + " (the target descriptors)");
    ps.emplace_back(s, t);
  }
  out.pairs = std::move(ps);
  return out;
}

}  // namespace kvlayout::check

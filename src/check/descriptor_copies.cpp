// The copies of a descriptors plan (descriptor_copies.hpp).
#include "check/descriptor_copies.hpp"

#include <stdexcept>

#include "spec/error.hpp"

namespace kvlayout::check::descriptor_copies {

std::int64_t copy_count(const DescriptorPlan& p) {
  if (p.has_transfers) return static_cast<std::int64_t>(p.transfers.size());
  return p.pairs ? static_cast<std::int64_t>(p.pairs->size()) : p.source->size();
}

Copy copy_at(const DescriptorPlan& p, std::int64_t k, const std::string& file, bool with_name) {
  Copy c;
  if (p.has_transfers) {
    const PairedCopy& t = p.transfers[static_cast<std::size_t>(k)];
    c = {t.src, t.dst, t.len, with_name ? "/transfers/" + std::to_string(k) : ""};
    return c;
  }
  const std::int64_t i = p.pairs ? (*p.pairs)[static_cast<std::size_t>(k)].first : k;
  const std::int64_t j = p.pairs ? (*p.pairs)[static_cast<std::size_t>(k)].second : k;
  const std::int64_t ls = p.source->len(i), lt = p.target->len(j);
  if (ls != lt)
    throw spec::SpecError(file, p.pairs ? "/pairs/" + std::to_string(k) : p.target->path(j),
                          "a pair of " + std::to_string(ls) + " source byte(s) (" + p.source->path(i) + ") and " +
                              std::to_string(lt) + " target byte(s) (" + p.target->path(j) + ")",
                          "paired descriptors of equal length (NIXL rejects such a pair when it is prepared)");
  c.src = p.source->addr(i);
  c.dst = p.target->addr(j);
  c.len = ls;
  if (with_name)
    c.name = (p.pairs ? "/pairs/" + std::to_string(k) + ": " : std::string()) + p.source->path(i) + " -> " + p.target->path(j);
  return c;
}

CheckResult out_of_bounds(const Copy& c, bool on_source, const Relocated& r, const layout::BoundLayout& b) {
  CheckResult out;
  out.verdict = Verdict::OutOfBounds;
  const std::int64_t addr = on_source ? c.src : c.dst;
  out.message = std::string(on_source ? "source" : "target") + " descriptor " + hex(addr) + " (" + std::to_string(c.len) +
                " bytes) " + r.why;
  out.counterexample = {{"copy", c.name}, {"side", on_source ? "source" : "target"}, {"layout", b.layout->name},
                        {"address", hex(addr)}, {"len", c.len}, {"why", r.why}};
  out.details.push_back(c.name);
  out.details.push_back(std::string(on_source ? "source" : "target") + " address " + hex(addr) + " + " + std::to_string(c.len) +
                        " bytes " + r.why);
  return out;
}

Copy find_copy(const DescriptorPlan& p, const std::vector<Region>& sr, const std::vector<Region>& tr, const PlanSetting& s,
               std::int64_t dst, std::int64_t src, const std::string& file) {
  const std::int64_t n = copy_count(p);
  for (std::int64_t k = 0; k < n; ++k) {
    Copy c = copy_at(p, k, file, false);
    const Relocated rt = relocate(tr, s.target_line, c.dst, c.len);
    if (!rt.ok || dst < rt.at || dst >= rt.at + c.len) continue;
    const Relocated rs = relocate(sr, s.source_line, c.src, c.len);
    if (rs.ok && rs.at - rt.at == src - dst) {
      Copy named = copy_at(p, k, file, true);
      named.src += dst - rt.at;  // the addresses of the byte itself
      named.dst += dst - rt.at;
      return named;
    }
  }
  throw std::logic_error("plan check: no copy writes the counterexample byte (does not reproduce)");
}

nlohmann::json copy_json(const Copy& c) { return {{"path", c.name}, {"source_address", hex(c.src)}, {"target_address", hex(c.dst)}}; }

}  // namespace kvlayout::check::descriptor_copies

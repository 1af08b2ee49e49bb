// Reading one side's descriptor list of a descriptors plan: flat `[addr, len]` entries (NIXL triples and
// objects too) or strided runs `{addr, len, stride, count}`, kept as runs and indexed like the flat list
// they stand for (DescriptorList), never expanded.
#include <algorithm>

#include "check/plan_json_util.hpp"

namespace kvlayout::check {

using namespace plan_json_util;

namespace {

DescriptorRun read_descriptor(const nlohmann::json& d, const std::string& file, const std::string& at, std::size_t i) {
  if (d.is_array() && (d.size() == 2 || d.size() == 3)) {
    DescriptorRun r;
    r.addr = read_address(d[0], file, at + "/" + std::to_string(i) + "/0");
    r.len = read_count(d[1], file, at + "/" + std::to_string(i) + "/1", true);
    r.stride = r.len;
    return r;
  }
  if (d.is_object()) {
    const std::string p = at + "/" + std::to_string(i);
    allow_only(d, {"addr", "len", "dev"}, file, p);
    const nlohmann::json* a = member(d, "addr");
    const nlohmann::json* l = member(d, "len");
    if (!a || !l) fail(file, p, d, "{\"addr\", \"len\"}");
    DescriptorRun r;
    r.addr = read_address(*a, file, p + "/addr");
    r.len = read_count(*l, file, p + "/len", true);
    r.stride = r.len;
    return r;
  }
  fail(file, at + "/" + std::to_string(i), d, "a descriptor [addr, len] or [addr, len, devID]");
}

DescriptorRun read_run(const nlohmann::json& d, const std::string& file, const std::string& at, std::size_t i) {
  const std::string p = at + "/" + std::to_string(i);
  if (!d.is_object()) fail(file, p, d, "a run {\"addr\", \"len\", \"stride\", \"count\"}");
  allow_only(d, {"addr", "len", "stride", "count", "dev"}, file, p);
  DescriptorRun r;
  for (const char* k : {"addr", "len", "stride", "count"})
    if (!member(d, k)) fail(file, p + "/" + k, nlohmann::json(nullptr), std::string("the run's ") + k);
  r.addr = read_address(d["addr"], file, p + "/addr");
  r.len = read_count(d["len"], file, p + "/len", true);
  r.stride = read_count(d["stride"], file, p + "/stride", false);
  r.count = read_count(d["count"], file, p + "/count", true);
  // The last descriptor's end must fit in 64 bits: addr + stride * (count - 1) + len.
  std::int64_t span = 0, last = 0, end = 0;
  if (!fits_mul(r.stride, r.count - 1, span) || !fits_add(r.addr, span, last) ||
      !fits_add(last, r.len, end))
    fail(file, p, d, "a run whose last byte fits in 64 bits");
  return r;
}

}  // namespace

// Phase: one side's list, from `<side>_descriptors` or `<side>_runs` (exactly one of them).
std::optional<DescriptorList> plan_json_util::read_list(const nlohmann::json& plan, const std::string& side, const std::string& file) {
  const std::string dk = side + "_descriptors", rk = side + "_runs";
  const nlohmann::json* d = member(plan, dk.c_str());
  const nlohmann::json* r = member(plan, rk.c_str());
  if (d && r) fail(file, "/" + rk, *r, "either " + dk + " or " + rk + ", not both");
  if (!d && !r) return std::nullopt;
  DescriptorList list;
  list.runs = r != nullptr;
  list.member = list.runs ? rk : dk;
  const nlohmann::json& items = list.runs ? *r : *d;
  const std::string at = "/" + list.member;
  if (!items.is_array()) fail(file, at, items, "an array");
  list.items.reserve(items.size());
  list.first.reserve(items.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    list.items.push_back(list.runs ? read_run(items[i], file, at, i) : read_descriptor(items[i], file, at, i));
    list.first.push_back(total);
    if (!fits_add(total, list.items.back().count, total)) fail(file, at, items[i], "fewer descriptors");
  }
  return list;
}

std::size_t DescriptorList::run_of(std::int64_t i) const {
  if (!runs) return static_cast<std::size_t>(i);
  auto it = std::upper_bound(first.begin(), first.end(), i);
  return static_cast<std::size_t>(it - first.begin()) - 1;
}

std::int64_t DescriptorList::addr(std::int64_t i) const {
  const std::size_t k = run_of(i);
  return items[k].addr + items[k].stride * (i - first[k]);  // fits: checked when the run was read
}

std::string DescriptorList::path(std::int64_t i) const {
  if (!runs) return "/" + member + "/" + std::to_string(i);
  const std::size_t k = run_of(i);
  return "/" + member + "/" + std::to_string(k) + " (descriptor " + std::to_string(i) + ", member " +
         std::to_string(i - first[k]) + " of the run)";
}

}  // namespace kvlayout::check

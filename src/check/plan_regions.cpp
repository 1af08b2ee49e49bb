// Reading the registered regions of one side of a descriptors plan: each names a tensor and instance of
// that side's layout, and no two overlap (an address must name one tensor instance).
#include <algorithm>

#include "check/plan_json_util.hpp"
#include "layout/view_algebra.hpp"

namespace kvlayout::check {
namespace {

int tensor_index(const layout::BoundLayout& b, const std::string& name) {
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    if (b.tensors[t].name == name) return static_cast<int>(t);
  return -1;
}

}  // namespace

namespace plan_json_util {

std::vector<Region> read_regions(const layout::BoundLayout& b, const nlohmann::json& plan, const char* key,
                                 const std::string& file) {
  const std::string at = std::string("/") + key;
  const nlohmann::json* list = member(plan, key);
  if (!list || !list->is_array() || list->empty())
    fail(file, at, list ? *list : nlohmann::json(nullptr), "a non-empty array of {\"tensor\", \"instance\", \"base\"[, \"len\"]}");
  std::vector<Region> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& r = (*list)[i];
    const std::string p = at + "/" + std::to_string(i);
    if (!r.is_object()) fail(file, p, r, "an object {\"tensor\", \"instance\", \"base\"[, \"len\"]}");
    allow_only(r, {"tensor", "instance", "base", "len", "name"}, file, p);
    Region region;
    region.path = p;
    const nlohmann::json* t = member(r, "tensor");
    if (!t || !t->is_string()) fail(file, p + "/tensor", t ? *t : nlohmann::json(nullptr), "a tensor name of " + b.layout->name);
    region.tensor = tensor_index(b, t->get<std::string>());
    if (region.tensor < 0) {
      std::string names;
      for (const auto& bt : b.tensors) names += (names.empty() ? "" : ", ") + bt.name;
      fail(file, p + "/tensor", *t, "a tensor of " + b.layout->name + ": " + names);
    }
    const auto& bt = b.tensors[static_cast<std::size_t>(region.tensor)];
    const nlohmann::json* inst = member(r, "instance");
    region.instance = inst ? read_count(*inst, file, p + "/instance", false) : 0;
    if (region.instance >= bt.instances)
      fail(file, p + "/instance", *inst, "an instance below " + std::to_string(bt.instances) + " (the instances of " + bt.name + ")");
    const nlohmann::json* base = member(r, "base");
    if (!base) fail(file, p + "/base", nlohmann::json(nullptr), "the region's first address");
    region.base = read_address(*base, file, p + "/base");
    const std::int64_t allocation = layout::byte_offset(bt.size, b.element_bytes());
    const nlohmann::json* len = member(r, "len");
    region.len = len ? read_count(*len, file, p + "/len", true) : allocation;
    std::int64_t end = 0;
    if (!fits_add(region.base, region.len, end)) fail(file, p, r, "a region whose end fits in 64 bits");
    out.push_back(region);
  }
  // Overlapping regions would make an address ambiguous.
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) { return out[a].base < out[c].base; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const Region& a = out[order[k - 1]];
    const Region& c = out[order[k]];
    if (c.base < a.base + a.len)
      throw spec::SpecError(file, c.path, "a region overlapping " + a.path, "disjoint regions (an address must name one tensor instance)");
  }
  return out;
}

}  // namespace plan_json_util
}  // namespace kvlayout::check

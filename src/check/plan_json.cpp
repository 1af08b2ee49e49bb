#include "check/plan_json.hpp"

#include <algorithm>

#include "expr/arithmetic.hpp"
#include "layout/bind_expression.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

std::string short_json(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

[[noreturn]] void fail(const std::string& file, const std::string& path, const nlohmann::json& found,
                       const std::string& expected) {
  throw spec::SpecError(file, path, short_json(found), expected);
}

// expr's checked arithmetic, as a yes/no: whether a op b fits in 64 bits.
bool fits_add(std::int64_t a, std::int64_t b, std::int64_t& out) {
  try {
    out = expr::checked_add(a, b);
    return true;
  } catch (const expr::ArithmeticError&) {
    return false;
  }
}
bool fits_mul(std::int64_t a, std::int64_t b, std::int64_t& out) {
  try {
    out = expr::checked_mul(a, b);
    return true;
  } catch (const expr::ArithmeticError&) {
    return false;
  }
}

const nlohmann::json* member(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

int tensor_index(const layout::BoundLayout& b, const std::string& name) {
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    if (b.tensors[t].name == name) return static_cast<int>(t);
  return -1;
}

// Phase: the regions of one side; each names a tensor and instance of that side's layout.
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

// Phase: one side's list, from `<side>_descriptors` or `<side>_runs` (exactly one of them).
std::optional<DescriptorList> read_list(const nlohmann::json& plan, const std::string& side, const std::string& file) {
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

}  // namespace

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

void allow_only(const nlohmann::json& object, const std::vector<std::string>& allowed, const std::string& file,
                const std::string& path) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      throw spec::SpecError(file, path + "/" + it.key(), "an unknown member \"" + it.key() + "\"", "one of: " + names);
    }
}

std::int64_t read_address(const nlohmann::json& v, const std::string& file, const std::string& path) {
  const char* expected = "an address: an integer >= 0 or a hex string \"0x...\"";
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, expected);
    std::int64_t a = v.get<std::int64_t>();
    if (a < 0) fail(file, path, v, expected);
    return a;
  }
  if (!v.is_string()) fail(file, path, v, expected);
  const std::string& s = v.get_ref<const std::string&>();
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const std::size_t from = hex ? 2 : 0;
  if (s.size() == from || s.size() - from > (hex ? 16u : 19u)) fail(file, path, v, expected);
  std::uint64_t value = 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) fail(file, path, v, expected);
    value = value * (hex ? 16 : 10) + static_cast<std::uint64_t>(d);
  }
  if (value > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, "an address below 2^63");
  return static_cast<std::int64_t>(value);
}

std::int64_t read_count(const nlohmann::json& v, const std::string& file, const std::string& path, bool positive) {
  const char* expected = positive ? "an integer > 0" : "an integer >= 0";
  if (!v.is_number_integer()) fail(file, path, v, expected);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, expected);
  std::int64_t n = v.get<std::int64_t>();
  if (n < 0 || (positive && n == 0)) fail(file, path, v, expected);
  return n;
}

DescriptorPlan read_descriptor_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                    const nlohmann::json& plan, const std::string& file) {
  allow_only(plan, {"form", "source_regions", "target_regions", "source_descriptors", "target_descriptors",
                    "source_runs", "target_runs", "pairs", "transfers", "tables", "scope", "comment", "request"},
             file, "");
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

void read_tables(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                 const std::string& file, layout::BlockTables& source_tables, layout::BlockTables& target_tables) {
  source_tables = layout::identity_tables(source);
  target_tables = layout::identity_tables(target);
  const nlohmann::json* tables = member(plan, "tables");
  if (!tables) return;
  if (!tables->is_object()) fail(file, "/tables", *tables, "an object {\"source.TABLE\": [...], \"target.TABLE\": [...]}");
  for (auto it = tables->begin(); it != tables->end(); ++it) {
    const std::string key = it.key(), path = "/tables/" + key;
    const bool is_source = key.rfind("source.", 0) == 0, is_target = key.rfind("target.", 0) == 0;
    if (!is_source && !is_target)
      throw spec::SpecError(file, path, "the name \"" + key + "\"", "source.TABLE or target.TABLE (tables named as in prove's counterexamples)");
    const layout::BoundLayout& b = is_source ? source : target;
    const std::string name = key.substr(7);
    if (!it.value().is_array()) fail(file, path, it.value(), "an array of table entries");
    std::vector<std::int64_t> entries;
    entries.reserve(it.value().size());
    for (std::size_t i = 0; i < it.value().size(); ++i) {
      const nlohmann::json& e = it.value()[i];
      if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
        fail(file, path + "/" + std::to_string(i), e, "an integer table entry");
      entries.push_back(e.get<std::int64_t>());
    }
    try {
      layout::set_table(b, is_source ? source_tables : target_tables, name, entries);
    } catch (const spec::SpecError& e) {
      throw spec::SpecError(file, path, e.found, e.expected + " (" + (is_source ? "source " : "target ") + b.layout->name + ")");
    }
  }
}

expr::Expr read_scope(const layout::BoundLayout& target, const nlohmann::json& plan, const std::string& file) {
  const nlohmann::json* scope = member(plan, "scope");
  if (!scope) return nullptr;
  if (!scope->is_string()) fail(file, "/scope", *scope, "a truth value over the content's coordinates, e.g. \"token < 32\"");
  return layout::bind_expression(target, scope->get<std::string>(), file, "/scope", true);
}

}  // namespace kvlayout::check

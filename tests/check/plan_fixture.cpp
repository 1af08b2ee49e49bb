#include "check/plan_fixture.hpp"

#include <array>
#include <cstdio>
#include <map>

#include "layout/view_algebra.hpp"
#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"

namespace kvlayout::test {
namespace {
constexpr std::int64_t kSideBase[2] = {std::int64_t{0x7f} << 40, std::int64_t{0x7e} << 40};

std::string hex(std::int64_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

struct Line {
  std::vector<std::int64_t> first, instance_bytes;
  std::int64_t total = 0;
};
Line line_of(const layout::BoundLayout& b) {
  Line l;
  for (const auto& t : b.tensors) {
    l.first.push_back(l.total);
    l.instance_bytes.push_back(t.size * b.element_bytes());
    l.total += t.instances * t.size * b.element_bytes();
  }
  return l;
}
std::int64_t line_byte(const Line& l, const layout::BoundLayout& b, const layout::Location& loc) {
  const auto t = static_cast<std::size_t>(loc.address.tensor);
  return l.first[t] + loc.address.instance * l.instance_bytes[t] + loc.address.offset * b.element_bytes();
}
// An address back to the line, or -1 outside every region.
std::int64_t line_of_address(const layout::BoundLayout& b, const Line& l, int side, std::int64_t addr) {
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    for (std::int64_t i = 0; i < b.tensors[t].instances; ++i) {
      const std::int64_t base = region_base(side, static_cast<int>(t), i);
      if (addr >= base && addr < base + l.instance_bytes[t]) return l.first[t] + i * l.instance_bytes[t] + (addr - base);
    }
  return -1;
}
std::int64_t read_addr(const nlohmann::json& v) {
  if (v.is_number()) return v.get<std::int64_t>();
  return static_cast<std::int64_t>(std::stoull(v.get<std::string>(), nullptr, 0));
}
}  // namespace

BoundPair bind_pair(const std::string& source, const std::string& target, const std::string& cache, const layout::Overrides& o) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto c = spec::load_cache(catalog.find_cache(cache).string());
  return {layout::bind(spec::load_layout(catalog.find_layout(source).string()), c, o),
          layout::bind(spec::load_layout(catalog.find_layout(target).string()), c, o)};
}

std::int64_t region_base(int side, int tensor, std::int64_t instance) {
  return kSideBase[side] + (std::int64_t{tensor} << 36) + (instance << 30);
}

nlohmann::json regions_json(const layout::BoundLayout& b, int side) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    for (std::int64_t i = 0; i < b.tensors[t].instances; ++i)
      out.push_back({{"tensor", b.tensors[t].name}, {"instance", i}, {"base", hex(region_base(side, static_cast<int>(t), i))}});
  return out;
}

std::int64_t address_of(const layout::BoundLayout& b, int side, const std::vector<std::int64_t>& coord, const layout::BlockTables& tables) {
  const auto loc = layout::locate(b, coord, tables);
  if (loc.placement != layout::Placement::Held) throw std::logic_error("address_of: not held");
  return region_base(side, loc.address.tensor, loc.address.instance) + loc.address.offset * b.element_bytes();
}

nlohmann::json table_json(const layout::BlockTables& tables, const layout::BoundLayout& b, int table) {
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t i = 0; i < b.tables[static_cast<std::size_t>(table)].length; ++i) out.push_back(tables.entry(static_cast<std::size_t>(table), i));
  return out;
}

void for_each_position(const std::vector<std::int64_t>& extents, const std::function<void(const std::vector<std::int64_t>&)>& f) {
  std::vector<std::int64_t> c(extents.size(), 0);
  while (true) {
    f(c);
    std::size_t k = extents.size();
    while (k > 0) {
      if (++c[k - 1] < extents[k - 1]) break;
      c[k - 1] = 0;
      --k;
    }
    if (k == 0) return;
  }
}

nlohmann::json plan_by_locate(const BoundPair& p, const layout::BlockTables& ts, const layout::BlockTables& tt,
                              const std::function<bool(const std::vector<std::int64_t>&)>& scope) {
  std::vector<std::array<std::int64_t, 3>> copies;  // src, dst, len
  const std::int64_t eb = p.target.element_bytes();
  for_each_position(p.target.coord_extents, [&](const std::vector<std::int64_t>& c) {
    if (scope && !scope(c)) return;
    const auto ls = layout::locate(p.source, c, ts), lt = layout::locate(p.target, c, tt);
    if (ls.placement != layout::Placement::Held || lt.placement != layout::Placement::Held) return;
    const std::int64_t s = address_of(p.source, 0, c, ts), d = address_of(p.target, 1, c, tt);
    if (!copies.empty() && copies.back()[0] + copies.back()[2] == s && copies.back()[1] + copies.back()[2] == d) {
      copies.back()[2] += eb;
      return;
    }
    copies.push_back({s, d, eb});
  });
  nlohmann::json plan = {{"form", "descriptors"}, {"source_regions", regions_json(p.source, 0)}, {"target_regions", regions_json(p.target, 1)}};
  nlohmann::json sd = nlohmann::json::array(), td = nlohmann::json::array();
  for (const auto& c : copies) {
    sd.push_back({hex(c[0]), c[2]});
    td.push_back({hex(c[1]), c[2]});
  }
  plan["source_descriptors"] = sd;
  plan["target_descriptors"] = td;
  nlohmann::json tables = nlohmann::json::object();
  for (std::size_t i = 0; i < p.source.tables.size(); ++i) tables["source." + p.source.tables[i].name] = table_json(ts, p.source, static_cast<int>(i));
  for (std::size_t i = 0; i < p.target.tables.size(); ++i) tables["target." + p.target.tables[i].name] = table_json(tt, p.target, static_cast<int>(i));
  plan["tables"] = tables;
  return plan;
}

bool simulate_ok(const BoundPair& p, const BoundPair* slack, const nlohmann::json& plan, const layout::BlockTables& ts,
                 const layout::BlockTables& tt, const std::function<bool(const std::vector<std::int64_t>&)>& scope) {
  const Line ls = line_of(p.source), lt = line_of(p.target);
  const std::int64_t eb = p.target.element_bytes();
  if (p.source.element_bytes() != eb || p.source.layout->dtype != p.target.layout->dtype) return false;
  // Tags: a source byte holding position x (index in the box) at byte k is x * eb + k; padding -(line + 2).
  std::vector<std::int64_t> src(static_cast<std::size_t>(ls.total)), dst(static_cast<std::size_t>(lt.total), -1);
  for (std::int64_t i = 0; i < ls.total; ++i) src[static_cast<std::size_t>(i)] = -(i + 2);
  std::int64_t index = 0;
  auto index_of = [&](const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& ext) {
    std::int64_t x = 0;
    for (std::size_t k = 0; k < c.size(); ++k) x = x * ext[k] + c[k];
    return x;
  };
  const BoundPair& tagger = slack ? *slack : p;  // slack positions tagged too (they are held there)
  for_each_position(tagger.source.coord_extents, [&](const std::vector<std::int64_t>& c) {
    const auto loc = layout::locate(tagger.source, c, ts);
    if (loc.placement != layout::Placement::Held) return;
    const std::int64_t at = line_byte(ls, p.source, loc);
    for (std::int64_t k = 0; k < eb; ++k) src[static_cast<std::size_t>(at + k)] = index_of(c, tagger.source.coord_extents) * eb + k;
    ++index;
  });
  // The copies, in plan order; a byte written twice with different values is a failure (ALIASED).
  std::vector<bool> written(static_cast<std::size_t>(lt.total), false);
  auto copy = [&](std::int64_t s, std::int64_t d, std::int64_t len) {
    const std::int64_t a = line_of_address(p.source, ls, 0, s), b = line_of_address(p.target, lt, 1, d);
    if (a < 0 || b < 0 || line_of_address(p.source, ls, 0, s + len - 1) != a + len - 1 ||
        line_of_address(p.target, lt, 1, d + len - 1) != b + len - 1)
      return false;
    for (std::int64_t k = 0; k < len; ++k) {
      auto& cell = dst[static_cast<std::size_t>(b + k)];
      const std::int64_t v = src[static_cast<std::size_t>(a + k)];
      if (written[static_cast<std::size_t>(b + k)] && cell != v) return false;
      written[static_cast<std::size_t>(b + k)] = true;
      cell = v;
    }
    return true;
  };
  const auto& sd = plan["source_descriptors"];
  const auto& td = plan["target_descriptors"];
  if (plan.contains("pairs")) {
    for (const auto& pr : plan["pairs"]) {
      const auto& s = sd[pr[0].get<std::size_t>()];
      const auto& d = td[pr[1].get<std::size_t>()];
      if (s[1] != d[1] || !copy(read_addr(s[0]), read_addr(d[0]), s[1].get<std::int64_t>())) return false;
    }
  } else {
    for (std::size_t i = 0; i < sd.size(); ++i)
      if (sd[i][1] != td[i][1] || !copy(read_addr(sd[i][0]), read_addr(td[i][0]), sd[i][1].get<std::int64_t>())) return false;
  }
  // Every in-scope held position carries its own tag; every other written byte is slack with its own tag.
  std::vector<bool> explained(static_cast<std::size_t>(lt.total), false);
  bool ok = true;
  for_each_position(tagger.target.coord_extents, [&](const std::vector<std::int64_t>& c) {
    const bool real = [&] {
      for (std::size_t k = 0; k < c.size(); ++k)
        if (c[k] >= p.target.coord_extents[k]) return false;
      return true;
    }();
    const auto loc = layout::locate(tagger.target, c, tt);
    if (loc.placement != layout::Placement::Held) return;
    const std::int64_t at = line_byte(lt, p.target, loc);
    const bool in = !scope || scope(c);
    if (!in) return;
    bool held_by_source = real ? layout::locate(p.source, c, ts).placement == layout::Placement::Held : true;
    for (std::int64_t k = 0; k < eb; ++k) {
      const std::int64_t want = index_of(c, tagger.target.coord_extents) * eb + k;
      const std::int64_t got = dst[static_cast<std::size_t>(at + k)];
      if (real) {
        if (got != want || !held_by_source) ok = false;
        explained[static_cast<std::size_t>(at + k)] = true;
      } else if (got == want) {
        explained[static_cast<std::size_t>(at + k)] = true;  // slack receiving its own bytes
      }
    }
  });
  for (std::int64_t i = 0; i < lt.total; ++i)
    if (written[static_cast<std::size_t>(i)] && !explained[static_cast<std::size_t>(i)]) ok = false;
  return ok;
}

}  // namespace kvlayout::test

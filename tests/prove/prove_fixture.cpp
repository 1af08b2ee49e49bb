#include "prove/prove_fixture.hpp"

#include <catch2/catch.hpp>

#include "spec/catalog.hpp"

namespace kvlayout::test {

prove::Proof prove_named(const std::string& source, const std::string& target, const std::string& cache,
                         const prove::ProveOptions& options) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return prove::prove(spec::load_layout(catalog.find_layout(source).string()),
                      spec::load_layout(catalog.find_layout(target).string()),
                      spec::load_cache(catalog.find_cache(cache).string()), options);
}

const prove::ObligationResult* find_obligation(const prove::Proof& p, const std::string& name, prove::Side side) {
  for (const auto* list : {&p.preconditions, &p.obligations})
    for (const auto& o : *list)
      if (o.name == name && o.side == side) return &o;
  return nullptr;
}

namespace {

// Tables for one side from a witness's table map: listed entries as given, the rest completed injectively.
layout::BlockTables tables_for(const layout::BoundLayout& b, const prove::PositionWitness& w, const std::string& side,
                               const layout::BoundLayout& other) {
  layout::BlockTables tables;
  for (const auto& t : b.tables) {
    bool shared = false;
    for (const auto& o : other.tables) shared = shared || o.name == t.name;
    auto it = w.tables.find(shared ? side + "." + t.name : t.name);
    std::map<std::int64_t, std::int64_t> fixed;
    if (it != w.tables.end()) fixed = it->second;
    std::set<std::int64_t> used;
    for (const auto& [e, v] : fixed) used.insert(v);
    std::vector<std::int64_t> entries(static_cast<std::size_t>(t.length));
    std::int64_t next = t.first;
    for (std::int64_t e = 0; e < t.length; ++e) {
      if (fixed.count(e)) {
        entries[static_cast<std::size_t>(e)] = fixed[e];
        continue;
      }
      while (used.count(next)) ++next;
      entries[static_cast<std::size_t>(e)] = next;
      used.insert(next);
    }
    tables.tables.push_back({t.first, false, entries, {}});
  }
  return tables;
}

void same_location(const layout::Location& shown, const layout::Location& again) {
  CHECK(shown.placement == again.placement);
  if (shown.placement == layout::Placement::NotHeld) return;
  CHECK(shown.address.tensor == again.address.tensor);
  CHECK(shown.address.instance == again.address.instance);
  CHECK(shown.address.offset == again.address.offset);
}

}  // namespace

void recheck_counterexamples(const prove::Proof& p) {
  for (const auto& o : p.obligations) {
    if (!o.counterexample) continue;
    INFO(o.name << "(" << prove::side_name(o.side) << "): " << o.counterexample->summary);
    for (const auto& w : o.counterexample->positions) {
      if (w.source) {
        auto again = layout::locate(*p.source_bound, w.coord, tables_for(*p.source_bound, w, "source", *p.target_bound));
        same_location(*w.source, again);
      }
      if (w.target) {
        auto again = layout::locate(*p.target_bound, w.coord, tables_for(*p.target_bound, w, "target", *p.source_bound));
        same_location(*w.target, again);
      }
    }
  }
}

}  // namespace kvlayout::test

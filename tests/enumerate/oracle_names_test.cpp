// The oracle names its findings as the prover's obligation registry does: every finding the cross-check
// reports on the registry's control pairs is a registry row's name, on one of that row's sides, with one
// of the reasons that row can refute with. (The oracle cannot include the prover, so it spells the names;
// this test keeps the two spellings one.)
#include <catch2/catch.hpp>
#include <algorithm>

#include "enumerate/cross_check.hpp"
#include "prove/obligation_registry.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

TEST_CASE("the cross-check's findings carry the obligation registry's names, sides and reasons", "[enumerate][registry]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  int findings = 0;
  for (const auto& row : prove::obligation_registry()) {
    if (row.control_source.empty()) continue;
    auto s = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout(row.control_source).string()), small);
    auto t = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout(row.control_target).string()), small);
    const enumerate::CrossCheck c = enumerate::cross_check(s, t);
    for (const auto& f : c.findings) {
      INFO(row.control_source << " -> " << row.control_target << ": finding " << f.name << "(" << verdict::side_name(f.side) << ")");
      ++findings;
      bool named = false;
      for (const auto& r : prove::obligation_registry())
        named = named || (r.name == f.name && std::find(r.sides.begin(), r.sides.end(), f.side) != r.sides.end() &&
                          std::find(r.refuted_as.begin(), r.refuted_as.end(), f.reason) != r.refuted_as.end());
      CHECK(named);
    }
  }
  CHECK(findings >= 6);  // every control pair that fits small is refuted by the oracle too
}

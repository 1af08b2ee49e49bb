#pragma once
// Building concrete plans for the plan checker's tests, independently of the checker: addresses come from
// layout::locate, one region per tensor instance at a fixed base, and an oracle that simulates a plan's
// byte copies on position-tagged buffers.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::test {

struct BoundPair {
  layout::BoundLayout source, target;
};
BoundPair bind_pair(const std::string& source, const std::string& target, const std::string& cache,
                    const layout::Overrides& overrides = {});

// Region bases: tensor t instance i of side (0 source, 1 target) at kSideBase[side] + t * 2^36 + i * 2^30.
std::int64_t region_base(int side, int tensor, std::int64_t instance);
nlohmann::json regions_json(const layout::BoundLayout& b, int side);
// The address of a held position's first byte.
std::int64_t address_of(const layout::BoundLayout& b, int side, const std::vector<std::int64_t>& coord,
                        const layout::BlockTables& tables);
// The table as a JSON array.
nlohmann::json table_json(const layout::BlockTables& tables, const layout::BoundLayout& b, int table);

// Visits every position of the coordinate box (last coordinate fastest).
void for_each_position(const std::vector<std::int64_t>& extents, const std::function<void(const std::vector<std::int64_t>&)>& f);

// A correct descriptors plan built by locate: one descriptor per element of every in-scope position both
// hold, merged while they continue in both sides. `scope` nullptr = all TARGET holds.
nlohmann::json plan_by_locate(const BoundPair& p, const layout::BlockTables& ts, const layout::BlockTables& tt,
                              const std::function<bool(const std::vector<std::int64_t>&)>& scope);

// The simulation oracle: copies the plan's bytes between tagged buffers (every source byte tagged with
// its position and byte, padding with its address), the target poisoned first; true iff every in-scope
// position TARGET holds ends with its own bytes and nothing else changed (except the slack of a partial
// last block receiving its own bytes: `slack` binds both sides with whole blocks, or nullptr).
bool simulate_ok(const BoundPair& p, const BoundPair* slack, const nlohmann::json& plan, const layout::BlockTables& ts,
                 const layout::BlockTables& tt, const std::function<bool(const std::vector<std::int64_t>&)>& scope);

}  // namespace kvlayout::test

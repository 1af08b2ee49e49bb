#pragma once
// One side of a `slots` plan (plan_slots.hpp): the ids the plan gives for a request's tokens, and how they
// name each token's physical block and slot on that side's layout; and the defects a slot map itself can
// have (slot_map_defects.cpp), asked before any byte is counted. Internal to src/check.
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/result.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check::slot_map {

// One side of the map: the ids in the plan, and how they name a token's physical block and slot.
struct SlotSide {
  const layout::BoundLayout* b = nullptr;
  std::string side;    // "source" / "target"
  std::string member;  // "source_blocks", "target_slots", ...
  int table = -1;
  std::int64_t block_size = 0;
  bool by_token = false;
  std::vector<std::int64_t> ids;
  std::int64_t t0 = 0, t1 = 0;
  std::vector<std::int64_t> base;  // a held position's coordinates; the token replaced per use

  std::int64_t needed() const { return by_token ? t1 - t0 : (t1 - 1) / block_size - t0 / block_size + 1; }
  // Entry of the list giving token t's place, or -1 when the list is too short.
  std::int64_t entry_of(std::int64_t t) const {
    const std::int64_t e = by_token ? t - t0 : t / block_size - t0 / block_size;
    return e < static_cast<std::int64_t>(ids.size()) ? e : -1;
  }
  std::int64_t block_of_entry(std::int64_t e) const {
    const std::int64_t id = ids[static_cast<std::size_t>(e)];
    return by_token ? expr::floor_div(id, block_size) : id;
  }
  std::int64_t slot_in_block(std::int64_t t, std::int64_t e) const {
    return by_token ? expr::floor_mod(ids[static_cast<std::size_t>(e)], block_size) : t % block_size;
  }
  std::string path(std::int64_t e) const { return "/" + member + "/" + std::to_string(e); }
  std::vector<std::int64_t> position(std::int64_t t) const {
    std::vector<std::int64_t> p = base;
    p[static_cast<std::size_t>(b->coord_index("token"))] = t;
    return p;
  }
  // Token t located with its logical block's table entry set to `block`.
  layout::Location locate_with(std::int64_t t, std::int64_t block) const {
    std::vector<std::map<std::int64_t, std::int64_t>> fixed(b->tables.size());
    fixed[static_cast<std::size_t>(table)][t / block_size] = block;
    const auto loc = layout::locate(*b, position(t), layout::tables_with(*b, fixed));
    if (loc.placement != layout::Placement::Held)
      throw std::logic_error("plan check: slots counterexample " + layout::format_coordinate(*b, position(t)) + " not held (does not reproduce)");
    return loc;
  }
  nlohmann::json json(std::int64_t t, std::int64_t block) const {
    const auto p = position(t);
    return position_json(*b, p, locate_with(t, block));
  }
  std::string text(std::int64_t t, std::int64_t block) const {
    const auto p = position(t);
    return position_text(*b, p, locate_with(t, block));
  }
};

// An integer member of the plan (SpecError naming it when malformed); `fallback` when absent and not required.
std::int64_t integer_member(const nlohmann::json& plan, const char* key, const std::string& file, bool required, std::int64_t fallback);

// One side's ids, block size and table, checked against the layout: the table must be the one a token's
// position reads, at entry token / block_size.
SlotSide read_side(const layout::BoundLayout& b, const std::string& side, const nlohmann::json& plan, const std::string& file,
                   bool by_token, std::int64_t t0, std::int64_t t1, const std::vector<std::int64_t>& base);

// The defects of the map itself (slot_map_defects.cpp), each with its counterexample, in the order asked.
CheckResult finding(Verdict v, std::string message, nlohmann::json cx, std::vector<std::string> details);
// An id outside its table's range (OUT_OF_BOUNDS).
std::optional<CheckResult> out_of_range(const SlotSide& s);
// Two entries naming one target block or slot (ALIASED).
std::optional<CheckResult> reused_target(const SlotSide& s);
// Tokens out of place on one side: a slot at another in-block offset, one logical block split over two
// physical blocks, or (source) one place read for two tokens (WRONG_MAPPING).
std::optional<CheckResult> misplaced(const SlotSide& s, const SlotSide& other);

}  // namespace kvlayout::check::slot_map

// The defects a slot map itself can have (slot_side.hpp), decided on the ids alone before any byte is
// counted: ids outside the table, a target id reused, tokens out of place.
#include "check/slot_side.hpp"

#include "spec/error.hpp"

namespace kvlayout::check::slot_map {

CheckResult finding(Verdict v, std::string message, nlohmann::json cx, std::vector<std::string> details) {
  CheckResult r;
  r.verdict = v;
  r.message = std::move(message);
  r.counterexample = std::move(cx);
  r.details = std::move(details);
  return r;
}

std::optional<CheckResult> out_of_range(const SlotSide& s) {
  const auto& t = s.b->tables[static_cast<std::size_t>(s.table)];
  if (s.t0 / s.block_size + s.needed() > t.length)
    throw spec::SpecError("", "/tokens", "tokens up to " + std::to_string(s.t1) + " in blocks of " + std::to_string(s.block_size),
                          "a request inside " + t.name + " (" + std::to_string(t.length) + " entries) of " + s.b->layout->name);
  for (std::size_t e = 0; e < s.ids.size(); ++e) {
    const std::int64_t block = s.block_of_entry(static_cast<std::int64_t>(e));
    if (s.ids[e] < 0 || block < t.first || block >= t.end)
      return finding(Verdict::OutOfBounds,
                     s.side + " " + (s.by_token ? "slot " : "block ") + std::to_string(s.ids[e]) + " at " + s.path(static_cast<std::int64_t>(e)) +
                         " lies outside " + t.name + "'s range [" + std::to_string(t.first) + ", " + std::to_string(t.end) + ")",
                     {{"side", s.side}, {"path", s.path(static_cast<std::int64_t>(e))}, {"id", s.ids[e]}, {"block", block},
                      {"table", t.name}, {"range", {t.first, t.end}}},
                     {s.path(static_cast<std::int64_t>(e)) + " = " + std::to_string(s.ids[e])});
  }
  return std::nullopt;
}

// Two entries naming one target block or slot.
std::optional<CheckResult> reused_target(const SlotSide& s) {
  std::map<std::int64_t, std::int64_t> seen;  // id -> first entry
  for (std::size_t e = 0; e < s.ids.size(); ++e) {
    auto [it, fresh] = seen.emplace(s.ids[e], static_cast<std::int64_t>(e));
    if (fresh) continue;
    const std::int64_t a = it->second, c = static_cast<std::int64_t>(e);
    // A token of each entry at one in-block slot: both land on one element.
    const std::int64_t ta = s.by_token ? s.t0 + a : std::max(s.t0, (s.t0 / s.block_size + a) * s.block_size);
    const std::int64_t tc = s.by_token ? s.t0 + c : (s.t0 / s.block_size + c) * s.block_size + ta % s.block_size;
    nlohmann::json cx = {{"path_a", s.path(a)}, {"path_b", s.path(c)}, {"id", s.ids[e]}};
    std::vector<std::string> details = {s.path(a) + " and " + s.path(c) + " are both " + std::to_string(s.ids[e])};
    const auto& tl = s.b->tables[static_cast<std::size_t>(s.table)];
    if (tc < s.t1 && tc / s.block_size != ta / s.block_size && tc / s.block_size < tl.length) {
      const std::int64_t block = s.block_of_entry(c);
      cx["first"] = s.json(ta, block);
      cx["second"] = s.json(tc, block);
      details.push_back("both " + s.text(ta, block));
      details.push_back("and " + s.text(tc, block));
    }
    return finding(Verdict::Aliased, "target " + std::string(s.by_token ? "slot " : "block ") + std::to_string(s.ids[e]) + " is written for two " +
                                         (s.by_token ? "tokens" : "blocks") + " (" + s.path(a) + ", " + s.path(c) + ")",
                   cx, details);
  }
  return std::nullopt;
}

// Tokens out of place on one side: a slot at another in-block offset, one logical block split over two
// physical blocks, or (source) one place read for two tokens.
std::optional<CheckResult> misplaced(const SlotSide& s, const SlotSide& other) {
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> block_of_logical;  // logical -> (physical, token)
  std::map<std::int64_t, std::int64_t> token_of_place;                             // id (slot or block) -> token
  std::map<std::int64_t, std::int64_t> logical_of_block;                           // physical -> first token in it
  for (std::int64_t t = s.t0; t < s.t1; ++t) {
    const std::int64_t e = s.entry_of(t);
    if (e < 0) break;
    const std::int64_t block = s.block_of_entry(e), slot = s.slot_in_block(t, e);
    if (slot != t % s.block_size)
      return finding(Verdict::WrongMapping,
                     "token " + std::to_string(t) + " is given " + s.side + " slot " + std::to_string(s.ids[static_cast<std::size_t>(e)]) +
                         " (offset " + std::to_string(slot) + " in block " + std::to_string(block) + "), but " + s.b->layout->name +
                         " keeps it at offset " + std::to_string(t % s.block_size),
                     {{"side", s.side}, {"path", s.path(e)}, {"token", t}, {"slot", s.ids[static_cast<std::size_t>(e)]},
                      {"position", s.json(t, block)}},
                     {s.path(e) + ": token " + std::to_string(t) + " -> slot " + std::to_string(s.ids[static_cast<std::size_t>(e)]),
                      s.b->layout->name + " reads " + s.text(t, block)});
    auto [it, fresh] = block_of_logical.emplace(t / s.block_size, std::make_pair(block, t));
    if (!fresh && it->second.first != block)
      return finding(Verdict::WrongMapping,
                     "tokens " + std::to_string(it->second.second) + " and " + std::to_string(t) + " share logical block " +
                         std::to_string(t / s.block_size) + " but the " + s.side + " map puts them in blocks " +
                         std::to_string(it->second.first) + " and " + std::to_string(block),
                     {{"side", s.side}, {"path", s.path(e)}, {"first", s.json(it->second.second, it->second.first)},
                      {"second", s.json(t, it->second.first)}, {"plan_block", block}},
                     {"one block table entry cannot name both; with " + std::to_string(it->second.first) + ", " + s.b->layout->name +
                      " reads " + s.text(t, it->second.first)});
    if (s.side == "source") {
      const std::int64_t place = s.by_token ? s.ids[static_cast<std::size_t>(e)] : block * s.block_size + slot;
      auto [pt, new_place] = token_of_place.emplace(place, t);
      if (!new_place) {
        const std::int64_t q = pt->second;
        nlohmann::json cx = {{"path", s.path(e)}, {"source", s.json(q, block)}};
        std::vector<std::string> details = {"source place " + std::to_string(place) + " is read for tokens " + std::to_string(q) +
                                            " and " + std::to_string(t)};
        if (other.entry_of(t) >= 0) {
          const std::int64_t tb = other.block_of_entry(other.entry_of(t));
          cx["destination"] = other.json(t, tb);
          details.push_back("target " + other.text(t, tb));
          details.push_back("receives " + s.text(q, block));
        }
        return finding(Verdict::WrongMapping,
                       "tokens " + std::to_string(q) + " and " + std::to_string(t) + " are read from one source " +
                           (s.by_token ? "slot" : "block") + " (" + s.path(e) + "): one receives the other's bytes",
                       cx, details);
      }
    }
    auto [lt, new_block] = logical_of_block.emplace(block, t);
    if (!new_block && lt->second / s.block_size != t / s.block_size) {
      // Two logical blocks in one physical block: no (injective) block table says that.
      const std::int64_t q = lt->second;
      return finding(s.side == "target" ? Verdict::Aliased : Verdict::WrongMapping,
                     "tokens " + std::to_string(q) + " and " + std::to_string(t) + " of logical blocks " + std::to_string(q / s.block_size) +
                         " and " + std::to_string(t / s.block_size) + " are both placed in " + s.side + " block " + std::to_string(block) +
                         " (" + s.path(e) + "): a block holds one logical block",
                     {{"side", s.side}, {"path", s.path(e)}, {"first", s.json(q, block)}, {"second", s.json(t, block)}},
                     {"both in block " + std::to_string(block) + ": " + s.text(q, block), "and " + s.text(t, block)});
    }
  }
  return std::nullopt;
}

}  // namespace kvlayout::check::slot_map

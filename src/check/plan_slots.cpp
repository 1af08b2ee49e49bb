#include "check/plan_slots.hpp"

#include <map>

#include "check/expected_move.hpp"
#include "check/plan_descriptors.hpp"
#include "check/plan_json.hpp"
#include "check/plan_storage.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

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

std::int64_t integer_member(const nlohmann::json& plan, const char* key, const std::string& file, bool required, std::int64_t fallback) {
  auto it = plan.find(key);
  if (it == plan.end()) {
    if (required) throw spec::SpecError(file, std::string("/") + key, "nothing", "a positive integer");
    return fallback;
  }
  return read_count(*it, file, std::string("/") + key, true);
}

int table_of(const layout::BoundLayout& b, const nlohmann::json& plan, const std::string& key, const std::string& file) {
  auto it = plan.find(key);
  if (it == plan.end()) {
    if (b.tables.size() == 1) return 0;
    throw spec::SpecError(file, "/" + key, "nothing", "the name of the block table of " + b.layout->name +
                                                          (b.tables.empty() ? " (it has none: the slots form needs one)" : ""));
  }
  if (it->is_string())
    for (std::size_t i = 0; i < b.tables.size(); ++i)
      if (b.tables[i].name == it->get<std::string>()) return static_cast<int>(i);
  std::string names;
  for (const auto& t : b.tables) names += (names.empty() ? "" : ", ") + t.name;
  throw spec::SpecError(file, "/" + key, it->dump(), "a table of " + b.layout->name + ": " + (names.empty() ? "(none)" : names));
}

// Phase: one side's ids, block size and table, checked against the layout: the table must be the one a
// token's position reads, at entry token / block_size.
SlotSide read_side(const layout::BoundLayout& b, const std::string& side, const nlohmann::json& plan, const std::string& file,
                   bool by_token, std::int64_t t0, std::int64_t t1, const std::vector<std::int64_t>& base) {
  SlotSide s;
  s.b = &b;
  s.side = side;
  s.by_token = by_token;
  s.t0 = t0;
  s.t1 = t1;
  s.base = base;
  s.member = side + (by_token ? "_slots" : "_blocks");
  const std::string own = side + "_block_size";
  s.block_size = plan.contains(own) ? integer_member(plan, own.c_str(), file, true, 0) : integer_member(plan, "block_size", file, true, 0);
  s.table = table_of(b, plan, side + "_table", file);
  auto it = plan.find(s.member);
  if (it == plan.end() || !it->is_array())
    throw spec::SpecError(file, "/" + s.member, it == plan.end() ? "nothing" : it->dump(), "an array of integer ids");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& v = (*it)[i];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw spec::SpecError(file, s.path(static_cast<std::int64_t>(i)), v.dump(), "an integer id");
    s.ids.push_back(v.get<std::int64_t>());
  }
  const auto& t = b.tables[static_cast<std::size_t>(s.table)];
  for (std::int64_t tok : {t0, t1 - 1}) {
    const auto loc = layout::locate(b, s.position(tok), layout::identity_tables(b));
    bool reads = false;
    for (const auto& r : loc.reads) reads = reads || (r.table == s.table && r.entry == tok / s.block_size);
    if (!reads)
      throw spec::SpecError(file, "/block_size", "block size " + std::to_string(s.block_size) + ": " + side + " " + b.layout->name +
                                                     " does not read " + t.name + "[" + std::to_string(tok / s.block_size) +
                                                     "] for token " + std::to_string(tok),
                            "the block size by which " + b.layout->name + " indexes " + t.name + " (e.g. " + side + "_block_size)");
  }
  return s;
}

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

}  // namespace

CheckResult check_slot_plan(const layout::BoundLayout& S, const layout::BoundLayout& T, const nlohmann::json& plan,
                            const std::string& file, const prove::ProveOptions&) {
  allow_only(plan, {"form", "granularity", "block_size", "source_block_size", "target_block_size", "tokens", "source_blocks",
                    "target_blocks", "source_slots", "target_slots", "source_table", "target_table", "request", "comment"},
             file, "");
  if (T.coord_index("token") < 0 || S.coord_index("token") < 0)
    throw spec::SpecError(file, "/form", "\"slots\" for a content without a token coordinate", "the descriptors form");
  auto g = plan.find("granularity");
  if (g == plan.end() || !g->is_string() || (*g != "block" && *g != "token"))
    throw spec::SpecError(file, "/granularity", g == plan.end() ? "nothing" : g->dump(), "\"block\" or \"token\"");
  const bool by_token = *g == "token";
  auto tk = plan.find("tokens");
  const std::int64_t extent = T.coord_extents[static_cast<std::size_t>(T.coord_index("token"))];
  if (tk == plan.end() || !tk->is_array() || tk->size() != 2)
    throw spec::SpecError(file, "/tokens", tk == plan.end() ? "nothing" : tk->dump(), "[first token, end token) of the request");
  const std::int64_t t0 = read_count((*tk)[0], file, "/tokens/0", false), t1 = read_count((*tk)[1], file, "/tokens/1", true);
  if (t0 >= t1 || t1 > extent)
    throw spec::SpecError(file, "/tokens", tk->dump(), "0 <= first < end <= " + std::to_string(extent) + " (num_tokens)");
  if (auto v = value_change(S, T, file)) return *v;
  // A held position's other coordinates (the first both hold), the token set per use.
  std::vector<std::int64_t> base(T.coord_names.size(), 0);
  emit::Plan ep;
  try {
    ep = emit::make_plan(S, T);
  } catch (const emit::EmitError&) {
  }
  if (!ep.cells.empty())
    for (std::size_t c = 0; c < base.size(); ++c) base[c] = ep.cells[0].coords[c].lo;
  const SlotSide src = read_side(S, "source", plan, file, by_token, t0, t1, base);
  const SlotSide dst = read_side(T, "target", plan, file, by_token, t0, t1, base);
  CheckResult out;
  out.checked_descriptors = static_cast<std::int64_t>(src.ids.size() + dst.ids.size());
  out.checked_bytes = 0;
  auto done = [&](CheckResult r) {
    r.checked_descriptors = out.checked_descriptors;
    r.checked_bytes = 0;
    return r;
  };
  for (const SlotSide* s : {&src, &dst})
    if (auto r = out_of_range(*s)) return done(*r);
  if (auto r = reused_target(dst)) return done(*r);
  if (auto r = misplaced(src, dst)) return done(*r);
  if (auto r = misplaced(dst, src)) return done(*r);
  if (static_cast<std::int64_t>(dst.ids.size()) > dst.needed()) {
    const std::int64_t e = dst.needed();
    return done(finding(Verdict::FrameViolation,
                        "target " + std::string(by_token ? "slot " : "block ") + std::to_string(dst.ids[static_cast<std::size_t>(e)]) +
                            " (" + dst.path(e) + ") is written, but tokens [" + std::to_string(t0) + ", " + std::to_string(t1) +
                            ") need only " + std::to_string(dst.needed()),
                        {{"path", dst.path(e)}, {"id", dst.ids[static_cast<std::size_t>(e)]}, {"needed", dst.needed()},
                         {"given", dst.ids.size()}},
                        {dst.path(e) + " lies beyond the request"}));
  }
  for (const SlotSide* s : {&src, &dst})
    if (static_cast<std::int64_t>(s->ids.size()) < s->needed()) {
      const std::int64_t first = s->by_token ? t0 + static_cast<std::int64_t>(s->ids.size())
                                             : std::max(t0, (t0 / s->block_size + static_cast<std::int64_t>(s->ids.size())) * s->block_size);
      const auto loc = layout::locate(T, dst.position(first), layout::identity_tables(T));
      if (loc.placement != layout::Placement::Held) throw std::logic_error("plan check: UNCOVERED sample not held (does not reproduce)");
      return done(finding(Verdict::Uncovered,
                          std::to_string(t1 - first) + " token(s) of the request have no " + s->side + " " +
                              (by_token ? "slot" : "block") + " (tokens " + std::to_string(first) + ".." + std::to_string(t1 - 1) + ")",
                          {{"count", t1 - first}, {"token_ranges", {{first, t1 - 1}}}, {"side", s->side},
                           {"position", position_json(T, dst.position(first), loc)}},
                          {"e.g. " + layout::format_coordinate(T, dst.position(first)) + " (" + s->member + " has " +
                           std::to_string(s->ids.size()) + " of " + std::to_string(s->needed()) + ")"}));
    }
  // The map is a pair of block tables: count the bytes the move writes with the expected move.
  std::vector<std::map<std::int64_t, std::int64_t>> fs(S.tables.size()), ft(T.tables.size());
  for (std::int64_t t = t0; t < t1; ++t) {
    fs[static_cast<std::size_t>(src.table)][t / src.block_size] = src.block_of_entry(src.entry_of(t));
    ft[static_cast<std::size_t>(dst.table)][t / dst.block_size] = dst.block_of_entry(dst.entry_of(t));
  }
  const auto ts = layout::tables_with(S, fs), tt = layout::tables_with(T, ft);
  const expr::Expr scope = layout::bind_expression(T, "token >= " + std::to_string(t0) + " && token < " + std::to_string(t1), file,
                                                   "/tokens", true);
  ExpectedMove move;
  try {
    move = expected_move(S, T, ts, tt, scope, storage_line(S), storage_line(T));
  } catch (const emit::EmitError& e) {
    out.verdict = Verdict::Unknown;
    out.message = std::string("the map is consistent, but the runs of this pair cannot be derived: ") + e.what();
    return out;
  }
  out.verdict = Verdict::Ok;
  out.message = "tokens [" + std::to_string(t0) + ", " + std::to_string(t1) + ") keep their places: " + std::to_string(move.positions) +
                " position(s) of " + T.layout->name + " each receive their own bytes";
  if (move.missing > 0) {
    out.verdict = Verdict::Uncovered;
    const auto loc = layout::locate(T, move.missing_sample, tt);
    out.message = std::to_string(move.missing) + " position(s) of the request's tokens that " + T.layout->name + " holds are not held by " +
                  S.layout->name;
    out.counterexample = {{"count", move.missing}, {"position", position_json(T, move.missing_sample, loc)}};
  }
  for (const auto& r : move.runs) out.checked_bytes = *out.checked_bytes + r.bytes;
  return out;
}

}  // namespace kvlayout::check

// The `slots` form of plan check (plan_slots.hpp): read both sides (slot_side.cpp), ask the map's own
// defects (slot_map_defects.cpp), then count the move the map asks for with the expected-move arithmetic.
#include "check/plan_slots.hpp"

#include <map>

#include "check/expected_move.hpp"
#include "check/plan_descriptors.hpp"
#include "check/plan_json.hpp"
#include "check/plan_storage.hpp"
#include "check/plan_top_level.hpp"
#include "check/slot_side.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {

using namespace slot_map;

CheckResult check_slot_plan(const layout::BoundLayout& S, const layout::BoundLayout& T, const nlohmann::json& plan,
                            const std::string& file, const prove::ProveOptions&) {
  ignore_unknown_top_level(plan, {"form", "granularity", "block_size", "source_block_size", "target_block_size", "tokens",
                                  "source_blocks", "target_blocks", "source_slots", "target_slots", "source_table", "target_table",
                                  "request", "comment"},
                           file);
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

// Member bytes of a families plan on target padding, judged concretely under identity tables by the
// descriptors form's rule for the slack of a partial last block (family_witness.hpp: PaddingWrites). The
// allowed slack is read off the expected move (expected_move.hpp), the very arithmetic the descriptors
// form uses, so the two forms cannot disagree on what slack is.
#include <algorithm>
#include <set>
#include <tuple>

#include "check/expected_move.hpp"
#include "check/family_witness.hpp"
#include "check/plan_storage.hpp"
#include "emit/plan.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

constexpr std::int64_t kLocateBox = std::int64_t{1} << 22;  // positions located for a padding witness

}  // namespace

// Member bytes on padding under identity tables, each judged by the descriptors' slack rule: allowed when
// the expected move (expected_move.hpp, the same arithmetic the descriptors form uses) has a slack run
// holding that target byte and the member reads that run's source byte for it.
PaddingWrites padding_writes(const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan) {
  PaddingWrites out;
  layout::BlockTables identity = layout::identity_tables(target), source_identity = layout::identity_tables(source);
  const StorageLine sl = storage_line(source), tl = storage_line(target);
  ExpectedMove move;
  try {
    move = expected_move(source, target, source_identity, identity, plan.scope ? *plan.scope : expr::Expr(), sl, tl);
  } catch (const emit::EmitError& e) {
    out.why = std::string("the pair's run structure (for the slack of a partial last block) is not available: ") + e.what();
    return out;
  } catch (const spec::SpecError& e) {
    out.why = std::string("the pair's expected move (for the slack of a partial last block) is not available: ") + e.what();
    return out;
  }
  out.slack_possible = move.slack_iterations > 0;
  std::vector<ExpectedRun> slack;
  for (const ExpectedRun& r : move.runs)
    if (r.slack) slack.push_back(r);
  std::int64_t members = 0;
  for (const Family& f : plan.families) members = expr::checked_add(members, f.members);
  if (layout::box_volume(target.coord_extents) > kLocateBox || members > kEvaluateMembers) return out;
  std::set<std::tuple<int, std::int64_t, std::int64_t>> held;  // (tensor, instance, element)
  std::vector<std::int64_t> x(target.coord_extents.size(), 0);
  for (bool more = true; more;) {
    layout::Location l = layout::locate(target, x, identity);
    if (l.placement == layout::Placement::Held) held.insert({l.address.tensor, l.address.instance, l.address.offset});
    std::size_t i = x.size();
    while (i-- > 0) {
      if (++x[i] < target.coord_extents[i]) break;
      x[i] = 0;
    }
    more = i != static_cast<std::size_t>(-1);
  }
  // Whether target line byte d may receive source line byte s: slack runs are sorted by dst and disjoint.
  auto allowed = [&](std::int64_t d, std::int64_t s) {
    auto it = std::upper_bound(slack.begin(), slack.end(), d, [](std::int64_t v, const ExpectedRun& r) { return v < r.dst; });
    if (it == slack.begin()) return false;
    --it;
    return d < it->dst + it->bytes && it->src + (d - it->dst) == s;
  };
  const std::int64_t eb = target.element_bytes();
  for (const Family& f : plan.families) {
    const auto tt = static_cast<std::size_t>(f.target.tensor), st = static_cast<std::size_t>(f.source.tensor);
    for_each_member(f, [&](const std::vector<std::int64_t>& v) {
      ConcreteMember cm = evaluate_member(plan, f, v, source_identity, identity);
      if (!cm.error.empty()) return true;  // in-bounds was proved before counting: cannot happen, nothing to judge
      const std::int64_t tbase = tl.first[tt] + cm.target_instance * tl.instance_bytes[tt];
      const std::int64_t sbase = sl.first[st] + cm.source_instance * sl.instance_bytes[st] + cm.source_offset;
      for (std::int64_t k = 0; k < cm.bytes; ++k) {
        const std::int64_t byte = cm.target_offset + k, e = expr::floor_div(byte, eb);
        if (held.count({f.target.tensor, cm.target_instance, e})) {
          k = (e + 1) * eb - cm.target_offset - 1;  // the rest of a held element
          continue;
        }
        if (allowed(tbase + byte, sbase + k)) {
          ++out.slack_bytes;
          continue;
        }
        out.violation = nlohmann::json{{"family", f.id}, {"member", member_json(f, v)}, {"byte", k},
                                       {"target", {{"tensor", target.tensors[tt].name}, {"instance", cm.target_instance},
                                                   {"element", e}, {"byte", byte}}},
                                       {"source", {{"tensor", source.tensors[st].name}, {"instance", cm.source_instance},
                                                   {"byte", cm.source_offset + k}}},
                                       {"tables", "identity"},
                                       {"how", "no position is stored there (every position located), and it is not the slack of a "
                                               "partial last block receiving the same slot's source bytes in scope"}};
        return false;
      }
      return true;
    });
    if (out.violation) break;
  }
  out.searched = true;
  return out;
}

}  // namespace kvlayout::check

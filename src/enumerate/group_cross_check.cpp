// cross_check_group: the group oracle in phases (see group_cross_check.hpp):
//   1. members    too large, fits, one content and one box on both sides;
//   2. instances  per instance: addresses in bounds and private under every table choice;
//   3. coverage   the union of the source instances' held positions against the target instances';
//   4. bytes      real bytes moved source instances -> target instances -> source instances;
//   5. grade      verdict::grade_of over what was observed.
// @post nothing is observed exact that was not enumerated: a member too large to enumerate makes the grade
// UNKNOWN, a member that does not fit is REFUSED and the row not cross-checked.
#include "enumerate/group_cross_check.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "enumerate/address_map.hpp"
#include "enumerate/limits.hpp"
#include "enumerate/patterns.hpp"
#include "enumerate/storage.hpp"
#include "layout/address.hpp"
#include "enumerate/finding.hpp"
#include "enumerate/value_survival.hpp"
#include "layout/content_match.hpp"
#include "layout/convert.hpp"
#include "spec/error.hpp"
#include "verdict/grade_of.hpp"

namespace kvlayout::enumerate {

using spec::DType;
using verdict::ObligationResult;
using verdict::Reason;
using verdict::Side;
using verdict::Status;

namespace {

using Members = std::vector<const Enumerated*>;

std::string who(const layout::Group& g, std::size_t member, Side side) {
  return g.who(member, side == Side::Source ? "source" : "target");
}

std::string where(const Enumerated& e, std::int64_t position) {
  return layout::format_coordinate(*e.bound, coordinate_of(*e.bound, position));
}

// Phase 2, one instance: addresses that leave their ranges, then elements two positions share, under each
// table choice. @post true when some position has no valid, private element.
bool observe_instance(const Enumerated& e, const std::string& label, Side side, bool checked, CrossCheck& out) {
  bool bad = false;
  for (std::size_t k = 0; k < e.maps.size(); ++k) {
    const AddressMap& m = e.maps[k];
    if (checked) out.positions_checked += static_cast<std::int64_t>(m.element.size());
    if (m.out_of_bounds > 0 && !bad) {
      out.findings.push_back(finding("in-bounds", side, Reason::OutOfBounds,
                                     label + ": " + std::to_string(m.out_of_bounds) + " positions out of bounds under " +
                                         table_choice_name(k) + " tables, first " + where(e, m.first_out_of_bounds)));
      bad = true;
    }
  }
  if (bad) return true;
  for (std::size_t k = 0; k < e.maps.size(); ++k) {
    const AddressMap& m = e.maps[k];
    std::vector<std::int64_t> owner(static_cast<std::size_t>(m.storage), -1);
    for (std::size_t p = 0; p < m.element.size(); ++p) {
      const std::int64_t el = m.element[p];
      if (el < 0 || el >= m.storage) continue;
      std::int64_t& o = owner[static_cast<std::size_t>(el)];
      if (o >= 0) {
        out.findings.push_back(finding("injective", side, Reason::Collision,
                                       label + ": " + where(e, o) + " and " + where(e, static_cast<std::int64_t>(p)) +
                                           " share element " + std::to_string(el) + " under " + table_choice_name(k) +
                                           " tables"));
        return true;
      }
      o = static_cast<std::int64_t>(p);
    }
  }
  return false;
}

// Per position: the lowest-numbered instance holding it, or -1.
std::vector<int> first_holder(const Members& members, std::int64_t n) {
  std::vector<int> out(static_cast<std::size_t>(n), -1);
  for (std::size_t m = members.size(); m-- > 0;) {
    const AddressMap& map = members[m]->maps.front();
    for (std::int64_t p = 0; p < n; ++p)
      if (map.element[static_cast<std::size_t>(p)] != kNotHeld) out[static_cast<std::size_t>(p)] = static_cast<int>(m);
  }
  return out;
}

struct Coverage {
  std::vector<int> source_of, target_of;  // per position: the instance a byte is read from / moved back from
  std::vector<std::int64_t> dropped;      // per source instance: its positions no target instance holds
};

// Phase 3. @pre one content and one box, every member fits.
Coverage observe_coverage(const layout::Group& S, const Members& sm, const layout::Group& T, const Members& tm,
                          CrossCheck& out) {
  const std::int64_t n = box_size(*sm.front()->bound);
  Coverage c{first_holder(sm, n), first_holder(tm, n), std::vector<std::int64_t>(sm.size(), 0)};
  std::int64_t missing = 0, dropped = 0, first_missing = -1, first_dropped = -1;
  for (std::int64_t p = 0; p < n; ++p) {
    const std::size_t i = static_cast<std::size_t>(p);
    if (c.target_of[i] >= 0 && c.source_of[i] < 0 && missing++ == 0) first_missing = p;
    if (c.source_of[i] >= 0 && c.target_of[i] < 0 && dropped++ == 0) first_dropped = p;
    if (c.target_of[i] >= 0) continue;
    for (std::size_t s = 0; s < sm.size(); ++s)
      if (sm[s]->maps.front().element[i] != kNotHeld) ++c.dropped[s];
  }
  if (missing) {
    const std::size_t q = static_cast<std::size_t>(c.target_of[static_cast<std::size_t>(first_missing)]);
    out.findings.push_back(finding("covers", Side::Pair, Reason::MissingPositions,
                                   std::to_string(missing) + " positions, first " + where(*tm[q], first_missing) +
                                       " held by " + who(T, q, Side::Target) + ", by no source instance"));
  }
  if (dropped) {
    const std::size_t s = static_cast<std::size_t>(c.source_of[static_cast<std::size_t>(first_dropped)]);
    out.findings.push_back(finding("carries", Side::Pair, Reason::DroppedPositions,
                                   std::to_string(dropped) + " positions, first " + where(*sm[s], first_dropped) +
                                       " held by " + who(S, s, Side::Source) + ", by no target instance"));
  }
  return c;
}

struct ByteMove {
  bool lossy = false;                 // some position's bytes did not return after S -> T -> S
  bool meaning_changes = false;       // some value times its scale differs between the sides
  std::vector<std::int64_t> padding;  // per source instance: elements no position addresses
};

std::uint32_t filler(const Patterns& ps, std::int64_t e) {
  return ps.safe[static_cast<std::size_t>((e * 7919 + 13) % static_cast<std::int64_t>(ps.safe.size()))];
}

// Phase 4. @pre one content and box, every member fits, every address valid and private.
// @post the byte accounting holds per source instance (what did not return is its dropped positions,
// its padding and values the conversion changed), else OracleError.
ByteMove move_bytes(const Members& sm, const Members& tm, const Coverage& c) {
  const DType sd = sm.front()->layout->dtype, td = tm.front()->layout->dtype;
  const Patterns ps = patterns_for(sd), pt = patterns_for(td);
  std::vector<std::vector<double>> scale_s, scale_t;
  for (const auto* e : sm) scale_s.push_back(position_scales(*e));
  for (const auto* e : tm) scale_t.push_back(position_scales(*e));
  const std::int64_t n = box_size(*sm.front()->bound);
  ByteMove out;
  out.padding.assign(sm.size(), 0);
  std::size_t tables = sm.front()->maps.size();
  for (const auto* e : sm) tables = std::min(tables, e->maps.size());
  for (const auto* e : tm) tables = std::min(tables, e->maps.size());
  for (std::size_t k = 0; k < tables; ++k) {
    for (int pass = 0; pass < ps.passes(n); ++pass) {
      // Every source instance holds data everywhere (padding included), and a position's value is the same
      // on every instance holding it (replicas).
      std::vector<Storage> src, dst;
      for (const auto* e : sm) {
        Storage s(*e->bound, e->maps[k]);
        for (std::int64_t el = 0; el < s.elements(); ++el) s.set(el, filler(ps, el));
        for (std::int64_t p = 0; p < n; ++p)
          if (e->maps[k].element[static_cast<std::size_t>(p)] >= 0) s.set(e->maps[k].element[static_cast<std::size_t>(p)], ps.of(p, pass));
        src.push_back(std::move(s));
      }
      for (std::size_t q = 0; q < tm.size(); ++q) {
        const AddressMap& mt = tm[q]->maps[k];
        Storage d(*tm[q]->bound, mt);
        d.fill(pt.poison);
        // What the move must leave in this instance: each held position's value converted, poison elsewhere.
        std::vector<std::uint32_t> expected(static_cast<std::size_t>(d.elements()), pt.poison);
        for (std::int64_t p = 0; p < n; ++p) {
          const std::int64_t et = mt.element[static_cast<std::size_t>(p)];
          const int s = c.source_of[static_cast<std::size_t>(p)];
          if (et < 0 || s < 0) continue;
          const std::int64_t es = sm[static_cast<std::size_t>(s)]->maps[k].element[static_cast<std::size_t>(p)];
          const std::uint32_t bits = src[static_cast<std::size_t>(s)].get(es);
          const std::uint32_t moved = layout::convert(sd, td, bits);
          d.set(et, moved);
          expected[static_cast<std::size_t>(et)] = layout::convert(sd, td, ps.of(p, pass));
          double vs = layout::decode(sd, bits) * scale_s[static_cast<std::size_t>(s)][static_cast<std::size_t>(p)];
          double vt = layout::decode(td, moved) * scale_t[q][static_cast<std::size_t>(p)];
          if (!same_value(vs, vt)) out.meaning_changes = true;
        }
        for (std::int64_t el = 0; el < d.elements(); ++el)
          if (d.get(el) != expected[static_cast<std::size_t>(el)])
            throw OracleError("the group move left target instance " + std::to_string(q) + " element " + std::to_string(el) +
                              " other than the position moved there (or poison)");
        dst.push_back(std::move(d));
      }
      // Back to every source instance, from the lowest-numbered target instance holding each position.
      for (std::size_t s = 0; s < sm.size(); ++s) {
        const AddressMap& ms = sm[s]->maps[k];
        Storage back(*sm[s]->bound, ms);
        back.fill(ps.poison);
        std::int64_t addressed = 0, unreturned = 0;
        for (std::int64_t p = 0; p < n; ++p) {
          const std::int64_t es = ms.element[static_cast<std::size_t>(p)];
          if (es < 0) continue;
          ++addressed;
          const int q = c.target_of[static_cast<std::size_t>(p)];
          if (q < 0) continue;
          const std::int64_t et = tm[static_cast<std::size_t>(q)]->maps[k].element[static_cast<std::size_t>(p)];
          back.set(es, layout::convert(td, sd, dst[static_cast<std::size_t>(q)].get(et)));
        }
        for (std::int64_t p = 0; p < n; ++p) {
          const std::int64_t es = ms.element[static_cast<std::size_t>(p)];
          if (es >= 0 && c.target_of[static_cast<std::size_t>(p)] >= 0 && back.get(es) != src[s].get(es)) ++unreturned;
        }
        if (unreturned) out.lossy = true;
        if (k != 0 || pass != 0) continue;
        std::int64_t returned = 0;
        for (std::int64_t el = 0; el < src[s].elements(); ++el) returned += back.get(el) == src[s].get(el);
        out.padding[s] = src[s].elements() - addressed;
        const std::int64_t lost = src[s].elements() - returned, explained = c.dropped[s] + out.padding[s];
        if (lost < explained)
          throw OracleError("fewer bytes failed to return to source instance " + std::to_string(s) +
                            " than its dropped positions and padding account for");
        if (unreturned == 0 && lost != explained)
          throw OracleError("bytes failed to return to source instance " + std::to_string(s) +
                            " that neither dropped positions nor padding explain");
      }
    }
  }
  return out;
}

Members pointers(const EnumeratedGroup& g) {
  Members out;
  for (const auto& e : g.members) out.push_back(&e);
  return out;
}

}  // namespace

EnumeratedGroup enumerate_group(const layout::Group& group, const spec::CacheShape& shape,
                                const layout::Overrides& overrides) {
  EnumeratedGroup g{group, {}};
  for (const auto& m : group.members) g.members.push_back(enumerate_layout(m.layout, shape, overrides));
  return g;
}

CrossCheck cross_check_group(const layout::Group& S, const Members& sm, const layout::Group& T, const Members& tm) {
  if (sm.empty() || tm.empty() || sm.size() != S.members.size() || tm.size() != T.members.size())
    throw OracleError("cross_check_group: a group's enumerated members do not match its members");
  CrossCheck out;
  struct SideView {
    const layout::Group& group;
    const Members& members;
    Side side;
  };
  const SideView sides[] = {{S, sm, Side::Source}, {T, tm, Side::Target}};
  // Phase 1. A member too large to enumerate: nothing observed, so no grade either.
  for (const SideView& v : sides)
    for (std::size_t m = 0; m < v.members.size(); ++m)
      if (v.members[m]->bound->fits() && !v.members[m]->too_large.empty()) {
        out.not_checked = who(v.group, m, v.side) + ": " + v.members[m]->too_large;
        return out;
      }
  // The content first, as the prover lists fits(pair) first (the first refuted finding names the reason).
  const std::optional<std::string> mismatch = layout::content_mismatch(*sm.front()->bound, *tm.front()->bound);
  if (mismatch) out.findings.push_back(finding("fits", Side::Pair, Reason::ContentMismatch, *mismatch));
  bool all_fit = true;
  for (const SideView& v : sides)
    for (std::size_t m = 0; m < v.members.size(); ++m) {
      const Enumerated& e = *v.members[m];
      if (e.bound->fits()) continue;
      all_fit = false;
      if (out.not_checked.empty())
        out.not_checked = e.layout->name + " does not fit " + e.bound->cache.name + ": " + e.bound->misfits.front().what;
      out.findings.push_back(finding("fits", v.side, Reason::DoesNotFit, who(v.group, m, v.side) + ": " + e.bound->misfits.front().what));
    }
  out.checked = out.not_checked.empty();
  // One box per group: every instance of a family has the content's coordinates and extents.
  for (const SideView& v : sides)
    for (const auto* e : v.members)
      if (all_fit && e->bound->coord_extents != v.members.front()->bound->coord_extents)
        throw OracleError(e->layout->name + ": an instance's coordinate box differs from its group's first instance's");

  // Phase 2: every instance on its own.
  bool bad_addresses = false;
  for (const SideView& v : sides)
    for (std::size_t m = 0; m < v.members.size(); ++m)
      if (v.members[m]->bound->fits())
        bad_addresses = observe_instance(*v.members[m], who(v.group, m, v.side), v.side, out.checked, out) || bad_addresses;

  // Phases 3 and 4: the groups against each other (after the instances, the order the prover finds them in,
  // so that the first refuted finding, which names the reason, is the same).
  const bool comparable = !mismatch && all_fit;
  std::optional<Coverage> coverage;
  if (comparable) coverage = observe_coverage(S, sm, T, tm, out);
  ByteMove move;
  const bool bytes_moved = comparable && !bad_addresses;
  if (bytes_moved) move = move_bytes(sm, tm, *coverage);

  // Values: by the byte move and by sweeping the element type; without a byte move the scale is judged by
  // declaration (as the pair oracle does).
  const spec::Layout& sd = *sm.front()->layout;
  const spec::Layout& td = *tm.front()->layout;
  const bool lossy = move.lossy || !sweep_exact(sd.dtype, td.dtype);
  const bool same_scale = (!sd.scale && !td.scale) ||
                          (sd.scale && td.scale && sd.scale->dtype == td.scale->dtype && sd.scale->per == td.scale->per);
  if (lossy)
    out.findings.push_back(finding("values", Side::Pair, Reason::LossyValues, "a value changed after S -> T -> S"));
  else if (bytes_moved ? move.meaning_changes : !same_scale)
    out.findings.push_back(finding("values", Side::Pair, Reason::ScaleMismatch, "a value's meaning changed with the scale"));
  for (std::size_t s = 0; s < move.padding.size(); ++s)
    if (move.padding[s] > 0)
      out.findings.push_back(finding("padding", Side::Source, Reason::Padding,
                                     who(S, s, Side::Source) + ": " + std::to_string(move.padding[s]) + " elements"));

  std::tie(out.grade, out.reason) = verdict::grade_of(out.findings);
  return out;
}

CrossCheck cross_check_group(const EnumeratedGroup& source, const EnumeratedGroup& target) {
  return cross_check_group(source.group, pointers(source), target.group, pointers(target));
}

CrossCheck cross_check_group(const layout::Group& source, const layout::Group& target, const spec::CacheShape& small,
                             const layout::Overrides& overrides) {
  return cross_check_group(enumerate_group(source, small, overrides), enumerate_group(target, small, overrides));
}

}  // namespace kvlayout::enumerate

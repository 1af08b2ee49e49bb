#include "enumerate/cross_check.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "enumerate/patterns.hpp"
#include "enumerate/finding.hpp"
#include "enumerate/value_survival.hpp"
#include "enumerate/storage.hpp"
#include "layout/address.hpp"
#include "layout/content_match.hpp"
#include "layout/convert.hpp"
#include "verdict/grade_of.hpp"
#include "spec/error.hpp"

namespace kvlayout::enumerate {

using verdict::ObligationResult;
using verdict::Reason;
using verdict::Side;
using verdict::Status;
using spec::DType;

namespace {

bool held(std::int64_t e) { return e != kNotHeld; }


std::string where(const Enumerated& e, std::int64_t position) {
  return layout::format_coordinate(*e.bound, coordinate_of(*e.bound, position));
}

}  // namespace

Enumerated enumerate_layout(std::shared_ptr<const spec::Layout> decl, const spec::CacheShape& shape,
                            const layout::Overrides& overrides) {
  Enumerated e;
  e.layout = decl;
  e.bound = std::make_shared<const layout::BoundLayout>(layout::bind(decl, shape, overrides));
  if (!e.bound->fits()) return e;
  // Checked before anything is allocated. The positions are the shape's doing (the content's box on it):
  // a shape too large to enumerate is bad input. The storage is the layout's (its strides may spread
  // it over terabytes of a small cache): a valid layout, just not enumerable, and its rows say so.
  const std::int64_t positions = box_size(*e.bound);
  if (positions > kEnumerationLimit)
    throw spec::SpecError(shape.file, "", "a cache shape on which " + decl->name + " has " + std::to_string(positions) + " positions",
                          "a shape small enough to enumerate, at most " + std::to_string(kEnumerationLimit) +
                              " positions per layout (such as small)");
  if (auto why = too_large(*e.bound)) {
    e.too_large = *why;
    return e;
  }
  e.tables = table_choices(*e.bound);
  for (const auto& t : e.tables) e.maps.push_back(map_addresses(*e.bound, t));
  return e;
}

namespace {

// Phase 1: per side, addresses that leave their ranges, then elements two positions share.
// @post true when some position of either side has no valid, private element (no byte move then).
bool observe_addresses(const Enumerated& S, const Enumerated& T, CrossCheck& out) {
  bool bad_addresses = false;
  for (const Enumerated* e : {&S, &T}) {
    if (!e->bound->fits()) continue;
    const Side side = e == &S ? Side::Source : Side::Target;
    for (std::size_t k = 0; k < e->maps.size(); ++k) {
      const AddressMap& m = e->maps[k];
      if (out.checked) out.positions_checked += static_cast<std::int64_t>(m.element.size());
      if (m.out_of_bounds > 0) {
        out.findings.push_back(finding("in-bounds", side, Reason::OutOfBounds,
                                       std::to_string(m.out_of_bounds) + " positions out of bounds under " +
                                           table_choice_name(k) + " tables, first " + where(*e, m.first_out_of_bounds)));
        bad_addresses = true;
        break;
      }
    }
  }
  for (const Enumerated* e : {&S, &T}) {
    if (!e->bound->fits()) continue;
    const Side side = e == &S ? Side::Source : Side::Target;
    for (std::size_t k = 0; k < e->maps.size(); ++k) {
      const AddressMap& m = e->maps[k];
      std::vector<std::int64_t> owner(static_cast<std::size_t>(m.storage), -1);
      std::string collision;
      for (std::size_t p = 0; p < m.element.size() && collision.empty(); ++p) {
        std::int64_t el = m.element[p];
        if (el < 0 || el >= m.storage) continue;
        std::int64_t& o = owner[static_cast<std::size_t>(el)];
        if (o >= 0) collision = where(*e, o) + " and " + where(*e, static_cast<std::int64_t>(p)) + " share element " + std::to_string(el);
        o = static_cast<std::int64_t>(p);
      }
      if (!collision.empty()) {
        out.findings.push_back(finding("injective", side, Reason::Collision, collision + " under " + table_choice_name(k) + " tables"));
        bad_addresses = true;
        break;
      }
    }
  }
  return bad_addresses;
}

// Phase 2: positions held by one side only. @pre one content, both sides fit. @post the number of
// positions the source holds and the target drops.
std::int64_t observe_coverage(const Enumerated& S, const Enumerated& T, CrossCheck& out) {
  const AddressMap& ms = S.maps.front();
  const AddressMap& mt = T.maps.front();
  std::int64_t dropped = 0, missing = 0;
  for (std::size_t p = 0; p < ms.element.size(); ++p) {
    if (held(mt.element[p]) && !held(ms.element[p])) ++missing;
    if (held(ms.element[p]) && !held(mt.element[p])) ++dropped;
  }
  if (missing) out.findings.push_back(finding("covers", Side::Pair, Reason::MissingPositions, std::to_string(missing) + " positions"));
  if (dropped) out.findings.push_back(finding("carries", Side::Pair, Reason::DroppedPositions, std::to_string(dropped) + " positions"));
  return dropped;
}

struct ByteMove {
  bool lossy = false;            // some position's bytes did not return after S -> T -> S
  bool meaning_changes = false;  // some value times its scale differs between the sides
  std::int64_t padding = 0;      // source elements no position addresses
};

// Phase 3: real bytes moved S -> T -> S under every table choice, the destination poisoned first.
// @pre one content, both sides fit, every address valid and private. @post the byte accounting holds:
// what did not return is the dropped positions, the padding and values the conversion changed, else
// OracleError (a bug in the oracle, never a grade).
ByteMove move_bytes(const Enumerated& S, const Enumerated& T, std::int64_t dropped) {
  const spec::Layout& sd = *S.layout;
  const spec::Layout& td = *T.layout;
  ByteMove out;
  const Patterns ps = patterns_for(sd.dtype), pt = patterns_for(td.dtype);
  const std::vector<double> scale_s = position_scales(S), scale_t = position_scales(T);
  for (std::size_t k = 0; k < S.maps.size(); ++k) {
    const AddressMap& ms = S.maps[k];
    const AddressMap& mt = T.maps[k];
    const std::int64_t n = static_cast<std::int64_t>(ms.element.size());
    for (int pass = 0; pass < ps.passes(n); ++pass) {
      Storage src(*S.bound, ms), dst(*T.bound, mt), back(*S.bound, ms);
      // The source holds data everywhere, padding included (as real memory does).
      for (std::int64_t e = 0; e < src.elements(); ++e)
        src.set(e, ps.safe[static_cast<std::size_t>((e * 7919 + 13) % static_cast<std::int64_t>(ps.safe.size()))]);
      for (std::int64_t p = 0; p < n; ++p)
        if (ms.element[static_cast<std::size_t>(p)] >= 0) src.set(ms.element[static_cast<std::size_t>(p)], ps.of(p, pass));
      dst.fill(pt.poison);
      back.fill(ps.poison);
      std::vector<char> written(static_cast<std::size_t>(dst.elements()), 0);
      for (std::int64_t p = 0; p < n; ++p) {
        std::int64_t es = ms.element[static_cast<std::size_t>(p)], et = mt.element[static_cast<std::size_t>(p)];
        if (es < 0 || et < 0) continue;
        std::uint32_t bits = src.get(es);
        std::uint32_t moved = layout::convert(sd.dtype, td.dtype, bits);
        dst.set(et, moved);
        written[static_cast<std::size_t>(et)] = 1;
        double vs = layout::decode(sd.dtype, bits) * scale_s[static_cast<std::size_t>(p)];
        double vt = layout::decode(td.dtype, moved) * scale_t[static_cast<std::size_t>(p)];
        if (!same_value(vs, vt)) out.meaning_changes = true;
      }
      // Every destination element no position was moved to is still poison.
      for (std::int64_t e = 0; e < dst.elements(); ++e)
        if (!written[static_cast<std::size_t>(e)] && dst.get(e) != pt.poison)
          throw OracleError("the reference move wrote target element " + std::to_string(e) + " outside the moved positions");
      for (std::int64_t p = 0; p < n; ++p) {
        std::int64_t es = ms.element[static_cast<std::size_t>(p)], et = mt.element[static_cast<std::size_t>(p)];
        if (es < 0 || et < 0) continue;
        back.set(es, layout::convert(td.dtype, sd.dtype, dst.get(et)));
      }
      std::int64_t returned = 0, unreturned_positions = 0;
      for (std::int64_t e = 0; e < src.elements(); ++e) returned += back.get(e) == src.get(e);
      for (std::int64_t p = 0; p < n; ++p) {
        std::int64_t es = ms.element[static_cast<std::size_t>(p)], et = mt.element[static_cast<std::size_t>(p)];
        if (es < 0 || et < 0) continue;
        if (back.get(es) != src.get(es)) ++unreturned_positions;
      }
      if (unreturned_positions) out.lossy = true;
      if (k == 0 && pass == 0) {
        std::int64_t addressed = 0;
        for (std::int64_t e : ms.element) addressed += e >= 0;
        out.padding = src.elements() - addressed;
        if (src.elements() - returned < dropped + out.padding)
          throw OracleError("fewer bytes failed to return than the dropped positions and padding account for");
        if (unreturned_positions == 0 && src.elements() - returned != dropped + out.padding)
          throw OracleError("bytes failed to return that neither dropped positions nor padding explain");
      }
    }
  }
  return out;
}

}  // namespace

CrossCheck cross_check(const Enumerated& S, const Enumerated& T) {
  CrossCheck out;
  // A side too large to enumerate: nothing observed, so no grade either.
  for (const Enumerated* e : {&S, &T})
    if (e->bound->fits() && !e->too_large.empty()) {
      out.not_checked = e->too_large;
      return out;
    }
  for (const Enumerated* e : {&S, &T})
    if (!e->bound->fits() && out.not_checked.empty())
      out.not_checked = e->layout->name + " does not fit " + e->bound->cache.name + ": " + e->bound->misfits.front().what;
  out.checked = out.not_checked.empty();
  auto& found = out.findings;
  const spec::Layout& sd = *S.layout;
  const spec::Layout& td = *T.layout;
  // One content means the same coordinates with the same extents: positions of one box are not
  // positions of another (the one definition, shared with the binder's other users).
  const std::optional<std::string> mismatch = layout::content_mismatch(*S.bound, *T.bound);
  if (mismatch) found.push_back(finding("fits", Side::Pair, Reason::ContentMismatch, *mismatch));
  if (!S.bound->fits()) found.push_back(finding("fits", Side::Source, Reason::DoesNotFit, S.bound->misfits.front().what));
  if (!T.bound->fits()) found.push_back(finding("fits", Side::Target, Reason::DoesNotFit, T.bound->misfits.front().what));

  // Per-side checks run whenever the side fits; pair checks need both sides and one content, and the
  // byte move valid, private addresses on both sides.
  const bool bad_addresses = observe_addresses(S, T, out);
  const bool comparable = !mismatch && S.bound->fits() && T.bound->fits();
  const std::int64_t dropped = comparable ? observe_coverage(S, T, out) : 0;
  const bool bytes_moved = comparable && !bad_addresses;
  ByteMove move;
  if (bytes_moved) move = move_bytes(S, T, dropped);

  // Values: by the byte move and by sweeping the element type; without a byte move the scale is judged by
  // declaration.
  const bool lossy = move.lossy || !sweep_exact(sd.dtype, td.dtype);
  const bool same_scale = (!sd.scale && !td.scale) ||
                          (sd.scale && td.scale && sd.scale->dtype == td.scale->dtype && sd.scale->per == td.scale->per);
  if (lossy)
    found.push_back(finding("values", Side::Pair, Reason::LossyValues, "a value changed after S -> T -> S"));
  else if (bytes_moved ? move.meaning_changes : !same_scale)
    found.push_back(finding("values", Side::Pair, Reason::ScaleMismatch, "a value's meaning changed with the scale"));
  if (bytes_moved && move.padding > 0)
    found.push_back(finding("padding", Side::Source, Reason::Padding, std::to_string(move.padding) + " elements"));

  std::tie(out.grade, out.reason) = verdict::grade_of(found);
  return out;
}

}  // namespace kvlayout::enumerate

// padding: is every element of the source's storage addressed by some held position? With in-bounds and
// injectivity proven, the number of unaddressed elements is exactly
//   sum over tensors of instances * allocation  -  |domain|,
// counted from the domain cells. A witness element is then found among structural candidates (block
// corners, the element before each stride step, the last element) by solver queries proving that no
// position, with identity tables, reaches it.
#include <algorithm>
#include <set>

#include "expr/arithmetic.hpp"
#include "layout/domain_cells.hpp"
#include "layout/view_algebra.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

// Small enough to confirm a witness concretely by locating every position (a re-check, not the proof).
constexpr std::int64_t kConcreteRecheckLimit = std::int64_t{1} << 22;
constexpr std::size_t kMaxCandidates = 24;

// Candidates in the order they most often turn out to be padding: the last element (the tail of a
// partial last block), the first (a reserved page), the element before each stride step (a row gap),
// the element before a view's offset, then the corners of each view's index box.
std::vector<std::int64_t> candidates(const layout::BoundTensor& t) {
  std::vector<std::int64_t> list = {t.size - 1, 0};
  for (const auto& v : t.views)
    for (std::size_t k = 0; k < v.extents.size(); ++k)
      if (v.extents[k] > 1 && v.strides[k] > 1) list.push_back(v.offset + v.strides[k] - 1);
  for (const auto& v : t.views)
    if (v.offset > 0) list.push_back(v.offset - 1);
  for (const auto& v : t.views) {
    const std::size_t rank = v.extents.size();
    const std::size_t corners = rank <= 8 ? (std::size_t{1} << rank) : 1;
    for (std::size_t mask = corners; mask-- > 0;) {
      std::int64_t e = v.offset;
      for (std::size_t k = 0; k < rank; ++k)
        if (mask & (std::size_t{1} << k)) e += (v.extents[k] - 1) * v.strides[k];
      list.push_back(e);
    }
  }
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  for (std::int64_t e : list)
    if (e >= 0 && e < t.size && seen.insert(e).second) out.push_back(e);
  return out;
}

// Locates every position (identity tables) and reports whether any lands on (tensor, instance, offset).
bool reached_concretely(const layout::BoundLayout& b, const ElementWitness& w) {
  layout::BlockTables tables = layout::identity_tables(b);
  std::vector<std::int64_t> coord(b.coord_extents.size(), 0);
  for (;;) {
    layout::Location l = layout::locate(b, coord, tables);
    if (l.placement == layout::Placement::Held && l.address.tensor == w.tensor && l.address.instance == w.instance &&
        l.address.offset == w.offset)
      return true;
    std::size_t i = coord.size();
    while (i-- > 0) {
      if (++coord[i] < b.coord_extents[i]) break;
      coord[i] = 0;
    }
    if (i == static_cast<std::size_t>(-1)) return false;
  }
}

}  // namespace

ObligationResult check_padding(Session& session, const Pair& pair) {
  ObligationResult r;
  r.name = "padding";
  r.side = Side::Source;
  r.method = "domain count";
  const layout::BoundLayout& b = pair.source;
  const std::int64_t total = layout::storage_elements(b);
  auto held = layout::domain_size(b);
  if (!held) {
    r.status = Status::Unknown;
    r.reason = Reason::SolverLimit;
    r.detail = "the domain is not a combination of single-coordinate bounds, so its size is not counted";
    return r;
  }
  const std::int64_t padding = total - *held;
  if (padding < 0)
    throw InternalError("padding: " + std::to_string(*held) + " positions in " + std::to_string(total) +
                        " elements, although injectivity was proven");
  if (padding == 0) {
    r.detail = "all " + std::to_string(total) + " elements of " + b.layout->name + "'s storage are addressed";
    return r;
  }
  r.status = Status::Refuted;
  r.reason = Reason::Padding;
  r.detail = std::to_string(padding) + " of " + std::to_string(total) + " elements of " + b.layout->name +
             "'s storage hold no position";
  Counterexample c;
  c.count = padding;
  c.summary = r.detail;
  std::size_t tried = 0;
  for (std::size_t ti = 0; ti < b.tensors.size() && !c.element; ++ti) {
    const auto& t = b.tensors[ti];
    for (std::int64_t e : candidates(t)) {
      if (tried++ >= kMaxCandidates) break;
      Encoder enc(session.ctx(), b, "S");
      SymbolicPosition x = enc.position("x");
      z3::expr reach = session.ctx().bool_val(false);
      for (std::size_t vi = 0; vi < t.views.size(); ++vi)
        reach = reach || (enc.view_domain(ti, vi, x) && enc.offset(ti, vi, x) == session.ctx().int_val(static_cast<int64_t>(e)));
      z3::expr identity = session.ctx().bool_val(true);
      for (const auto& l : enc.lookups())
        identity = identity && l.value == l.entry + session.ctx().int_val(static_cast<int64_t>(b.tables[static_cast<std::size_t>(l.table)].first));
      Query s(session, "padding witness " + t.name + " element " + std::to_string(e));
      s.add(enc.in_box(x) && enc.instance(ti, x) == 0 && reach && identity);
      if (s.check() != Answer::Unsat) continue;
      c.element = ElementWitness{true, static_cast<int>(ti), 0, e};
      break;
    }
  }
  if (c.element) {
    const auto& t = b.tensors[static_cast<std::size_t>(c.element->tensor)];
    std::string where = t.name + "[0] element " + std::to_string(c.element->offset);
    const std::int64_t box = layout::box_volume(b.coord_extents);
    if (box <= kConcreteRecheckLimit) {
      if (reached_concretely(b, *c.element)) throw InternalError("padding witness " + where + " is addressed by a position");
      c.details.push_back("witness " + where + ": no position reaches it (identity tables; re-checked by locating all " +
                          std::to_string(box) + " coordinates)");
    } else {
      c.details.push_back("witness " + where + ": no position reaches it (identity tables; solver proof)");
    }
  } else {
    c.details.push_back("no witness element among the " + std::to_string(tried) + " structural candidates tried");
  }
  r.counterexample = c;
  r.method = "domain count + z3 witness";
  return r;
}

}  // namespace kvlayout::prove

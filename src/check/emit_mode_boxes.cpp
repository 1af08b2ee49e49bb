// Plan emit, phase 1 (emit_mode_boxes.hpp): cells cut into boxes of mode values.
#include "check/emit_mode_boxes.hpp"

#include "layout/bind_expression.hpp"
#include "layout/domain_cells.hpp"
#include "spec/error.hpp"

namespace kvlayout::check::emit_boxes {

// The value of coordinate `cc` is base + sum(mode * weight) over its digits.
std::int64_t coordinate_base(const emit::Cell& cell, const emit::CellCoordinate& cc) {
  return cc.modes.size() == 1 && cell.modes[static_cast<std::size_t>(cc.modes[0])].weight == 1 ? cc.lo : 0;
}

namespace {

// Digit boxes covering exactly the values [a, b) of digits i.. (most significant first) of one coordinate.
void digit_boxes(const emit::Cell& cell, const std::vector<int>& digits, std::size_t i, std::int64_t a, std::int64_t b,
                 std::vector<Range>& prefix, std::vector<std::vector<Range>>& out) {
  if (a >= b) return;
  const emit::Mode& m = cell.modes[static_cast<std::size_t>(digits[i])];
  const std::int64_t w = m.weight;
  auto rest_full = [&](std::vector<Range> p) {
    for (std::size_t j = i + 1; j < digits.size(); ++j) p.push_back({0, cell.modes[static_cast<std::size_t>(digits[j])].extent});
    out.push_back(p);
  };
  auto lower = [&](std::int64_t q, std::int64_t lo, std::int64_t hi) {
    prefix.push_back({q, q + 1});
    if (lo == 0 && hi == w) rest_full(prefix);
    else digit_boxes(cell, digits, i + 1, lo, hi, prefix, out);
    prefix.pop_back();
  };
  if (i + 1 == digits.size()) {  // the least significant digit (weight 1)
    std::vector<Range> p = prefix;
    p.push_back({a, b});
    out.push_back(p);
    return;
  }
  std::int64_t qa = a / w, ra = a % w, qb = b / w, rb = b % w;
  if (qa == qb) return lower(qa, ra, rb);
  if (ra > 0) lower(qa++, ra, w);
  if (qa < qb) {
    std::vector<Range> p = prefix;
    p.push_back({qa, qb});
    rest_full(p);
  }
  if (rb > 0) lower(qb, 0, rb);
}

}  // namespace

// Every box of mode values of `cell` whose coordinates lie in `ranges` (inclusive, one per coordinate).
std::vector<ModeBox> boxes_of(const emit::Cell& cell, const std::vector<layout::Interval>& ranges) {
  std::vector<ModeBox> out = {ModeBox(cell.modes.size())};
  for (std::size_t c = 0; c < cell.coords.size(); ++c) {
    const auto& cc = cell.coords[c];
    const std::int64_t lo = std::max(cc.lo, ranges[c].lo), hi = std::min(cc.hi, ranges[c].hi);
    if (lo > hi) return {};
    const std::int64_t base = coordinate_base(cell, cc);
    std::vector<std::vector<Range>> parts;
    std::vector<Range> prefix;
    digit_boxes(cell, cc.modes, 0, lo - base, hi - base + 1, prefix, parts);
    std::vector<ModeBox> next;
    for (const ModeBox& b : out)
      for (const auto& p : parts) {
        ModeBox nb = b;
        for (std::size_t j = 0; j < cc.modes.size(); ++j) nb[static_cast<std::size_t>(cc.modes[j])] = p[j];
        next.push_back(nb);
      }
    out = std::move(next);
  }
  return out;
}

// The coordinate boxes of the scope (the whole box without one).
std::vector<std::vector<layout::Interval>> scope_boxes(const layout::BoundLayout& T, const std::optional<std::string>& scope) {
  std::vector<layout::Interval> whole;
  for (std::int64_t e : T.coord_extents) whole.push_back({0, e - 1});
  if (!scope) return {whole};
  expr::Expr e = layout::bind_expression(T, *scope, "", "--scope", true);
  auto cells = layout::cells(T.coord_extents, {e});
  if (!cells) throw spec::SpecError("", "--scope", *scope, "a combination of single-coordinate bounds (e.g. token < 32 && layer == 0)");
  std::vector<std::vector<layout::Interval>> out;
  for (const auto& c : *cells)
    if (c.truth[0]) out.push_back(c.ranges);
  return out;
}

}  // namespace kvlayout::check::emit_boxes

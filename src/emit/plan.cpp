#include "emit/plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "expr/evaluate.hpp"
#include "expr/print.hpp"
#include "layout/domain_cells.hpp"
#include "spec/name_check.hpp"

namespace kvlayout::emit {

bool selects_instance_of(const Cell& cell, const SideForm& f, int m) {
  if (f.instance_coord < 0) return false;
  const auto& im = cell.coords[static_cast<std::size_t>(f.instance_coord)].modes;
  return std::find(im.begin(), im.end(), m) != im.end();
}

bool selects_instance(const Cell& cell, int m) {
  return selects_instance_of(cell, cell.source, m) || selects_instance_of(cell, cell.target, m);
}

bool places_single_elements(const Atom& atom, std::int64_t element_bytes) { return std::abs(atom.coef) * element_bytes < 64; }

bool read_by_atoms(const SideForm& f, int m) {
  return std::any_of(f.atoms.begin(), f.atoms.end(), [&](const Atom& a) { return std::find(a.modes.begin(), a.modes.end(), m) != a.modes.end(); });
}

using expr::Op;

namespace {

// ---- which divisors each coordinate meets ---------------------------------------------------------

// Collects m for every `c / m` and `c % m` (m > 1 literal); marks c opaque when it is divided in any other
// form (e.g. `(c + 1) / m`), since digits would not express that.
void collect_divisors(const expr::Expr& e, std::vector<std::set<std::int64_t>>& divisors, std::vector<bool>& opaque) {
  if ((e->op == Op::Div || e->op == Op::Mod || e->op == Op::CeilDiv) && e->args[1]->op == Op::Literal) {
    const expr::Expr& a = e->args[0];
    std::int64_t m = e->args[1]->value;
    if (a->op == Op::Coord && m > 1 && e->op != Op::CeilDiv) {
      divisors[static_cast<std::size_t>(a->value)].insert(m);
      return;
    }
  }
  if (e->op == Op::Div || e->op == Op::Mod || e->op == Op::CeilDiv) {
    std::function<void(const expr::Expr&)> mark = [&](const expr::Expr& x) {
      if (x->op == Op::Coord) opaque[static_cast<std::size_t>(x->value)] = true;
      for (const auto& y : x->args) mark(y);
    };
    mark(e->args[0]);
    mark(e->args[1]);
  }
  for (const auto& a : e->args) collect_divisors(a, divisors, opaque);
}

// ---- rewriting coordinates as digit sums ---------------------------------------------------------

struct Digits {
  std::vector<std::int64_t> weights;  // ascending: 1, w1, w2, ...
  std::vector<int> modes;             // mode of each weight (same order)
  std::int64_t lo = 0;                // opaque coordinate: value = lo + mode
};

expr::Expr sum_of(const Cell& cell, const Digits& d, std::size_t from, std::size_t to, std::int64_t unit) {
  expr::Expr s = expr::literal(0);
  for (std::size_t i = from; i < to; ++i) {
    const Mode& m = cell.modes[static_cast<std::size_t>(d.modes[i])];
    expr::Expr term = expr::coord(d.modes[i], m.var);
    if (d.weights[i] / unit != 1) term = expr::make(Op::Mul, {term, expr::literal(d.weights[i] / unit)});
    s = expr::make(Op::Add, {s, term});
  }
  return expr::fold(s);
}

expr::Expr rewrite(const expr::Expr& e, const Cell& cell, const std::vector<Digits>& digits) {
  if (e->op == Op::Coord) {
    const Digits& d = digits[static_cast<std::size_t>(e->value)];
    expr::Expr s = sum_of(cell, d, 0, d.weights.size(), 1);
    return d.lo ? expr::fold(expr::make(Op::Add, {s, expr::literal(d.lo)})) : s;
  }
  if ((e->op == Op::Div || e->op == Op::Mod) && e->args[0]->op == Op::Coord && e->args[1]->op == Op::Literal) {
    const Digits& d = digits[static_cast<std::size_t>(e->args[0]->value)];
    auto at = std::find(d.weights.begin(), d.weights.end(), e->args[1]->value);
    if (at != d.weights.end() && d.lo == 0) {
      std::size_t j = static_cast<std::size_t>(at - d.weights.begin());
      return e->op == Op::Div ? sum_of(cell, d, j, d.weights.size(), e->args[1]->value) : sum_of(cell, d, 0, j, 1);
    }
  }
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(rewrite(a, cell, digits));
  return expr::fold(std::make_shared<const expr::Node>(expr::Node{e->op, e->value, e->name, std::move(args)}));
}

// ---- affine forms ----------------------------------------------------------------------------------

struct Linear {
  std::int64_t constant = 0;
  std::map<int, std::int64_t> coef;               // mode -> coefficient
  std::vector<std::pair<std::int64_t, expr::Expr>> atoms;
};

void modes_of(const expr::Expr& e, std::set<int>& out) {
  if (e->op == Op::Coord) out.insert(static_cast<int>(e->value));
  for (const auto& a : e->args) modes_of(a, out);
}

Linear linear(const expr::Expr& e, std::int64_t scale) {
  Linear l;
  switch (e->op) {
    case Op::Literal: l.constant = scale * e->value; return l;
    case Op::Coord: l.coef[static_cast<int>(e->value)] = scale; return l;
    case Op::Add:
    case Op::Sub: {
      Linear a = linear(e->args[0], scale), b = linear(e->args[1], e->op == Op::Add ? scale : -scale);
      a.constant += b.constant;
      for (auto [m, c] : b.coef) a.coef[m] += c;
      a.atoms.insert(a.atoms.end(), b.atoms.begin(), b.atoms.end());
      return a;
    }
    case Op::Neg: return linear(e->args[0], -scale);
    case Op::Mul:
      if (e->args[1]->op == Op::Literal) return linear(e->args[0], scale * e->args[1]->value);
      if (e->args[0]->op == Op::Literal) return linear(e->args[1], scale * e->args[0]->value);
      break;
    default: break;
  }
  std::set<int> ms;
  modes_of(e, ms);
  if (ms.empty()) {
    // A constant that folding could not reduce (should not happen after binding).
    throw EmitError("a constant index term that does not fold: " + expr::to_string(e));
  }
  l.atoms.push_back({scale, e});
  return l;
}

// `v` is view `view` of tensor `tensor` of b, or that view with its token rewritten to a slot (invert).
SideForm side_form(const layout::BoundLayout& b, int tensor, int view, const layout::BoundView& v, const Cell& cell,
                   const std::vector<Digits>& digits) {
  SideForm f;
  f.tensor = tensor;
  f.view = view;
  const auto& t = b.tensors[static_cast<std::size_t>(tensor)];
  f.constant = v.offset;
  f.stride.assign(cell.modes.size(), 0);
  std::map<std::string, std::size_t> atom_index;
  for (std::size_t k = 0; k < v.index.size(); ++k) {
    Linear l = linear(rewrite(v.index[k], cell, digits), v.strides[k]);
    f.constant += l.constant;
    for (auto [m, c] : l.coef) f.stride[static_cast<std::size_t>(m)] += c;
    for (auto& [c, e] : l.atoms) {
      std::string key = expr::to_string(e);
      auto it = atom_index.find(key);
      if (it != atom_index.end()) {
        f.atoms[it->second].coef += c;
        continue;
      }
      Atom a{c, e, {}};
      std::set<int> ms;
      modes_of(e, ms);
      a.modes.assign(ms.begin(), ms.end());
      atom_index[key] = f.atoms.size();
      f.atoms.push_back(a);
    }
  }
  f.instance_coord = t.per;
  f.instance_coord_first = t.per >= 0 ? t.per_first : 0;
  for (int i = 0; i < tensor; ++i) f.instance_first += b.tensors[static_cast<std::size_t>(i)].instances;
  return f;
}

// ---- cells -----------------------------------------------------------------------------------------

// The first-match domain of each view of a layout, as predicates over coordinates.
std::vector<std::pair<std::pair<int, int>, expr::Expr>> view_domains(const layout::BoundLayout& b) {
  std::vector<std::pair<std::pair<int, int>, expr::Expr>> out;
  expr::Expr earlier = expr::literal(0);
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    for (std::size_t v = 0; v < b.tensors[t].views.size(); ++v) {
      const expr::Expr& h = b.tensors[t].views[v].holds;
      out.push_back({{static_cast<int>(t), static_cast<int>(v)},
                     expr::fold(expr::make(Op::And, {h, expr::make(Op::Not, {earlier})}))});
      earlier = expr::fold(expr::make(Op::Or, {earlier, h}));
    }
  return out;
}

void collect_reads(const expr::Expr& e, bool on_source, int token, std::vector<TableRead>& reads,
                   std::set<std::string>& seen, const layout::BoundLayout& b) {
  if (e->op == Op::Lookup) {
    std::vector<std::string> names;
    std::set<int> coords;
    modes_of(e->args[0], coords);
    for (int c : coords)
      if (c != token)
        throw EmitError("a table entry of " + b.layout->name + " depends on " + b.coord_names[static_cast<std::size_t>(c)] +
                        " (`" + expr::to_string(e) + "`); generated kernels support entries that depend on the token only");
    std::string key = std::string(on_source ? "S" : "T") + std::to_string(e->value) + expr::to_string(e->args[0]);
    if (seen.insert(key).second) reads.push_back({on_source, static_cast<int>(e->value), e->args[0]});
  }
  for (const auto& a : e->args) collect_reads(a, on_source, token, reads, seen, b);
}

std::string digit_name(const std::string& coord, std::int64_t weight, std::int64_t next) {
  if (next == 0 && weight == 1) return coord;
  if (next == 0) return coord + "_div" + std::to_string(weight);
  if (weight == 1) return coord + "_mod" + std::to_string(next);
  return coord + "_div" + std::to_string(weight) + "_mod" + std::to_string(next / weight);
}

// Divisors a plan phase adds to a coordinate's own (phase 5f's instance groups), by coordinate.
using ExtraDivisors = std::map<int, std::int64_t>;

// Phase 1: every coordinate split into mixed-radix digits wherever either side divides it, or `extra`
// asks (one mode per digit, least significant first). @post the modes' extents multiply to each
// coordinate's span. `names` are the coordinates' names (the token's is "slot" in an inverted cell, whose
// `token` is -1).
std::vector<Digits> split_into_modes(const std::vector<std::string>& names, const layout::BoundView& sv, const layout::BoundView& tv,
                                     const layout::Cell& box, int token, const ExtraDivisors& extra, Cell& cell) {
  const std::size_t n = names.size();
  std::vector<std::set<std::int64_t>> divisors(n);
  std::vector<bool> opaque(n, false);
  for (const auto* v : {&sv, &tv})
    for (const auto& e : v->index) collect_divisors(e, divisors, opaque);
  for (const auto& [c, m] : extra) divisors[static_cast<std::size_t>(c)].insert(m);
  std::vector<Digits> digits(n);
  for (std::size_t c = 0; c < n; ++c) {
    CellCoordinate cc{names[c], box.ranges[c].lo, box.ranges[c].hi, {}, false};
    std::vector<std::int64_t> chain(divisors[c].begin(), divisors[c].end());
    bool usable = !opaque[c] && cc.lo == 0;
    for (std::size_t i = 1; i < chain.size() && usable; ++i) usable = chain[i] % chain[i - 1] == 0;
    Digits& d = digits[c];
    if (!usable) chain.clear();
    d.weights.push_back(1);
    d.weights.insert(d.weights.end(), chain.begin(), chain.end());
    d.lo = usable ? 0 : cc.lo;
    const std::int64_t span = cc.hi - d.lo + 1;
    // Modes from the least significant digit up; registered most significant first in cc.modes.
    for (std::size_t i = 0; i < d.weights.size(); ++i) {
      Mode m;
      m.coord = static_cast<int>(c);
      m.weight = d.weights[i];
      bool top = i + 1 == d.weights.size();
      std::int64_t next = top ? 0 : d.weights[i + 1];
      m.extent = top ? (span + m.weight - 1) / m.weight : next / m.weight;
      m.top_of_token = top && static_cast<int>(c) == token;
      m.var = digit_name(cc.name, m.weight, next);
      d.modes.push_back(static_cast<int>(cell.modes.size()));
      cell.modes.push_back(m);
    }
    cc.modes.assign(d.modes.rbegin(), d.modes.rend());
    cc.guarded = static_cast<int>(c) == token || span % d.weights.back() != 0;
    cell.coords.push_back(cc);
  }
  return digits;
}

// Phase 2: the modes that may join the copied run or a tile, by ascending target stride: not read by a
// table lookup, not selecting an instance, not of a coordinate checked against its bound.
std::vector<int> run_candidates(Cell& cell) {
  std::vector<bool> pinned(cell.modes.size(), false);
  for (const SideForm* f : {&cell.source, &cell.target}) {
    for (const Atom& a : f->atoms)
      for (int m : a.modes) pinned[static_cast<std::size_t>(m)] = true;
    if (f->instance_coord >= 0)
      for (int m : cell.coords[static_cast<std::size_t>(f->instance_coord)].modes) pinned[static_cast<std::size_t>(m)] = true;
  }
  for (const auto& cc : cell.coords)
    if (cc.guarded)
      for (int m : cc.modes) pinned[static_cast<std::size_t>(m)] = true;
  std::vector<int> candidates;
  for (std::size_t m = 0; m < cell.modes.size(); ++m)
    if (!pinned[m] && cell.modes[m].extent > 1) candidates.push_back(static_cast<int>(m));
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return std::abs(cell.target.stride[static_cast<std::size_t>(a)]) < std::abs(cell.target.stride[static_cast<std::size_t>(b)]);
  });
  return candidates;
}

// Phase 3: the longest run contiguous in both sides (CuTe's max_common_vector).
// @post cell.run_elements is the product of the run's extents, each stride 1 x the ones below it.
void find_common_run(Cell& cell, const std::vector<int>& candidates) {
  std::int64_t expect = 1;
  for (int m : candidates) {
    if (cell.target.stride[static_cast<std::size_t>(m)] != expect || cell.source.stride[static_cast<std::size_t>(m)] != expect) break;
    cell.run.push_back(m);
    expect *= cell.modes[static_cast<std::size_t>(m)].extent;
  }
  cell.run_elements = expect;
}

bool contains(const std::vector<int>& modes, int m) { return std::find(modes.begin(), modes.end(), m) != modes.end(); }

// Coalesce (CuTe's coalesce): a mode whose strides continue a tile axis in both layouts joins that axis.
// Across (target-contiguous): so that the tiles walk whole target rows (head and dim of a [slot][head][dim]
// target); not along a bound-checked coordinate (its bound is checked on the across axis as that
// coordinate's own positions, which merged modes would break) nor across gathered source rows (the across
// axis is then placed by lookups, not by a stride). Down (source-contiguous): only for gathered source
// rows, so that each row placed by a lookup is read whole before the next (measured on vllm-flash-nhd ->
// llamacpp-vtrans, where a token's 8 heads were 8 passes over the gathered rows: see bench/README.md);
// not along a bound-checked coordinate either. Other tiles' printers walk the down axis by its own extent.
// @pre the tile modes are set. @post tile_target_extent and tile_source_extent are the merged axes' extents.
void coalesce_tile_axes(Cell& cell, const std::vector<int>& candidates) {
  const int across = cell.tile_target_contiguous, down = cell.tile_source_contiguous;
  auto guarded = [&](int m) { return cell.tile_guard >= 0 && cell.modes[static_cast<std::size_t>(m)].coord == cell.tile_guard; };
  // Grows one axis: `merged` and `extent` are its merged modes and extent, `along` the layout in which it is
  // contiguous, `other` the other layout, in which the axis steps by `step`.
  auto grow = [&](std::vector<int>& merged, std::int64_t& extent, const SideForm& along, const SideForm& other, std::int64_t step) {
    for (bool grew = true; grew;) {
      grew = false;
      for (int m : candidates) {
        if (m == across || m == down || contains(cell.tile_target_merged, m) || contains(cell.tile_source_merged, m)) continue;
        if (along.stride[static_cast<std::size_t>(m)] == extent && other.stride[static_cast<std::size_t>(m)] == step * extent) {
          merged.push_back(m);
          extent *= cell.modes[static_cast<std::size_t>(m)].extent;
          grew = true;
        }
      }
    }
  };
  cell.tile_target_extent = cell.modes[static_cast<std::size_t>(across)].extent;
  cell.tile_source_extent = cell.modes[static_cast<std::size_t>(down)].extent;
  if (!guarded(across) && !cell.tile_source_rows_gathered)
    grow(cell.tile_target_merged, cell.tile_target_extent, cell.target, cell.source, cell.source.stride[static_cast<std::size_t>(across)]);
  if (!guarded(down) && cell.tile_source_rows_gathered)
    grow(cell.tile_source_merged, cell.tile_source_extent, cell.source, cell.target, cell.target.stride[static_cast<std::size_t>(down)]);
}

// Phase 4: with no common run, a transpose in 8 x 8 tiles: one mode contiguous in the target, another in
// the source. @post tile_target_contiguous and tile_source_contiguous both set, or both -1.
void find_transpose_tile(Cell& cell, const std::vector<int>& candidates) {
  if (cell.run.empty()) {
    // Tile candidates: the run candidates, and the lowest digit of a bound-checked coordinate (the token's
    // slot in its block), whose bound is then checked per tile.
    std::vector<int> tileable = candidates;
    int guarded_digit_coord = -1;
    for (std::size_t c = 0; c < cell.coords.size(); ++c) {
      const auto& cc = cell.coords[c];
      if (!cc.guarded || cc.modes.empty()) continue;
      int lowest = cc.modes.back();
      bool blocked = false;
      for (const SideForm* f : {&cell.source, &cell.target}) {
        for (const Atom& a : f->atoms)
          blocked = blocked || std::find(a.modes.begin(), a.modes.end(), lowest) != a.modes.end();
        blocked = blocked || f->instance_coord == static_cast<int>(c);
      }
      if (!blocked && cell.modes[static_cast<std::size_t>(lowest)].weight == 1 && cell.modes[static_cast<std::size_t>(lowest)].extent > 1) {
        tileable.push_back(lowest);
      }
    }
    auto find = [&](const SideForm& f) {
      for (int m : tileable)
        if (f.stride[static_cast<std::size_t>(m)] == 1 && cell.modes[static_cast<std::size_t>(m)].extent % 8 == 0) return m;
      return -1;
    };
    int across = find(cell.target), down = find(cell.source);
    if (across >= 0 && down >= 0 && across != down) {
      for (int m : {across, down}) {
        const auto& cc = cell.coords[static_cast<std::size_t>(cell.modes[static_cast<std::size_t>(m)].coord)];
        if (cc.guarded) guarded_digit_coord = cell.modes[static_cast<std::size_t>(m)].coord;
      }
      cell.tile_target_contiguous = across;
      cell.tile_source_contiguous = down;
      cell.tile_guard = guarded_digit_coord;
      coalesce_tile_axes(cell, candidates);
    }
  }
}

// The coordinate whose bound the tile checks when m is a tile mode: m's coordinate when that coordinate is
// bound-checked (m must then be its lowest digit), else -1. Sets `ok` false for a digit the tile cannot check.
int tile_bound_of(const Cell& cell, int m, bool& ok) {
  const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
  const auto& cc = cell.coords[static_cast<std::size_t>(mode.coord)];
  if (!cc.guarded) return -1;
  ok = ok && !cc.modes.empty() && cc.modes.back() == m && mode.weight == 1;
  return mode.coord;
}

// Phase 4b: gathered-row tiles, when no plain tile exists because the only mode contiguous in one side
// feeds the other side's table lookups (legacy's V into SGLang's token pool: token % 16 is contiguous in
// the source, and places each token's target row through the pool's table). The tile's rows on that other
// side are then addressed one by one. Extents need not be multiples of 8: a gathered tile counts its rows.
// @post either nothing changed, or both tile modes are set and at least one side's rows are gathered.
void find_gathered_tile(Cell& cell, const std::vector<int>& candidates) {
  auto usable = [&](int m, const SideForm& contiguous_in) {
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    if (mode.extent < 2 || mode.top_of_token || contiguous_in.stride[static_cast<std::size_t>(m)] != 1) return false;
    if (read_by_atoms(contiguous_in, m) || selects_instance(cell, m)) return false;
    bool ok = true;
    tile_bound_of(cell, m, ok);
    return ok;
  };
  int across = -1, down = -1;
  for (std::size_t m = 0; m < cell.modes.size() && across < 0; ++m)
    if (usable(static_cast<int>(m), cell.target)) across = static_cast<int>(m);
  for (std::size_t m = 0; m < cell.modes.size() && down < 0; ++m)
    if (static_cast<int>(m) != across && usable(static_cast<int>(m), cell.source)) down = static_cast<int>(m);
  if (across < 0 || down < 0) return;
  const bool gathered_target = read_by_atoms(cell.target, down), gathered_source = read_by_atoms(cell.source, across);
  if (!gathered_target && !gathered_source) return;  // a plain tile: find_transpose_tile's (multiples of 8)
  bool ok = true;
  const int bound_across = tile_bound_of(cell, across, ok), bound_down = tile_bound_of(cell, down, ok);
  if (!ok || (bound_across >= 0 && bound_down >= 0)) return;  // one bound-checked axis per tile at most
  cell.tile_target_contiguous = across;
  cell.tile_source_contiguous = down;
  cell.tile_guard = bound_across >= 0 ? bound_across : bound_down;
  cell.tile_target_rows_gathered = gathered_target;
  cell.tile_source_rows_gathered = gathered_source;
  coalesce_tile_axes(cell, candidates);
}

// How far apart in side f's memory consecutive values of mode m are: its stride, or the coefficient of the
// lookup it feeds (a table's entry moves whole blocks); the side's instance coordinate above everything.
double significance(const Cell& cell, int m, const SideForm& f) {
  double s = static_cast<double>(std::abs(f.stride[static_cast<std::size_t>(m)]));
  for (const Atom& a : f.atoms)
    if (contains(a.modes, m)) s = std::max(s, static_cast<double>(std::abs(a.coef)) * 1.5);
  if (f.instance_coord >= 0 && contains(cell.coords[static_cast<std::size_t>(f.instance_coord)].modes, m)) s = 1e300;
  return s;
}

// Whether mode a's loop goes outside mode b's in `first`'s physical order (ties by `then`'s, then by digit).
bool more_significant(const Cell& cell, int a, int b, const SideForm& first, const SideForm& then) {
  const double fa = significance(cell, a, first), fb = significance(cell, b, first);
  if (fa != fb) return fa > fb;
  const double ta = significance(cell, a, then), tb = significance(cell, b, then);
  if (ta != tb) return ta > tb;
  return cell.modes[static_cast<std::size_t>(a)].weight > cell.modes[static_cast<std::size_t>(b)].weight;
}

// Phase 5: the other loops, in the destination's physical order. @post every mode of extent > 1 (and the
// token's top digit) is in exactly one of run, tile or loops.
void order_loops(Cell& cell) {
  // The other loops, in the destination's physical order: by the size of the step each takes in the
  // target (its stride, or the coefficient of the lookup it feeds); the target's instance outermost.
  for (std::size_t m = 0; m < cell.modes.size(); ++m) {
    bool in_run = std::find(cell.run.begin(), cell.run.end(), static_cast<int>(m)) != cell.run.end();
    if (!in_run && !in_tile(cell, static_cast<int>(m)) && (cell.modes[m].extent > 1 || cell.modes[m].top_of_token)) cell.loops.push_back(static_cast<int>(m));
  }
  std::stable_sort(cell.loops.begin(), cell.loops.end(), [&](int a, int b) { return more_significant(cell, a, b, cell.target, cell.source); });
}

// Whether every run is whole 64-byte lines of the target: streaming stores then complete each target line
// whatever order the runs come in, so the order can serve the reads.
bool runs_are_whole_target_lines(const Cell& cell, std::int64_t element_bytes) {
  auto line_multiple = [&](std::int64_t elements) { return (elements * element_bytes) % 64 == 0; };
  if (!line_multiple(cell.run_elements) || !line_multiple(cell.target.constant)) return false;
  for (std::size_t m = 0; m < cell.modes.size(); ++m)
    if (!line_multiple(cell.target.stride[m]) && !contains(cell.run, static_cast<int>(m))) return false;
  return std::all_of(cell.target.atoms.begin(), cell.target.atoms.end(), [&](const Atom& a) { return line_multiple(a.coef); });
}

}  // namespace

StreamWalk walk_streams(const Cell& cell, const std::vector<int>& loops, const SideForm& f, std::int64_t least_stream_elements, std::int64_t most) {
  std::int64_t interleaved = 1, chunk = cell.run_elements, streams = most + 1;
  StreamWalk walk;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    const auto m = static_cast<std::size_t>(*it);
    if (read_by_atoms(f, *it)) break;
    if (least_stream_elements > 0 && chunk >= least_stream_elements && streams >= 2 && streams <= most) {  // see plan.hpp
      walk.hops = std::abs(f.stride[m]) != chunk;
      break;
    }
    if (std::abs(f.stride[m]) == chunk) {
      chunk *= cell.modes[m].extent;
      streams = interleaved;
    } else {
      interleaved = std::min(interleaved * cell.modes[m].extent, most + 1);
    }
  }
  walk.streams = chunk < least_stream_elements ? most + 1 : streams;
  walk.hops = walk.hops && walk.streams <= most;
  return walk;
}

std::int64_t streams_along(const Cell& cell, const std::vector<int>& loops, const SideForm& f, std::int64_t least_stream_elements,
                           std::int64_t most) {
  return walk_streams(cell, loops, f, least_stream_elements, most).streams;
}

std::int64_t contiguous_chunk(const Cell& cell, const std::vector<int>& loops, const SideForm& f) {
  std::int64_t chunk = cell.run_elements;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    const auto m = static_cast<std::size_t>(*it);
    if (read_by_atoms(f, *it) || std::abs(f.stride[m]) != chunk) break;
    chunk *= cell.modes[m].extent;
  }
  return chunk;
}

namespace {

// The most read streams the target's order is kept for where it also writes few streams: the L2 streamer
// of an Intel Xeon follows 32 pages. A target that holds a token's layers together (SGLang's host pools)
// is then written in its own order, reading one stream per layer tensor, instead of read in the source's
// order with each 256-byte run written a page from the last. In one process, 1 / 2 threads:
// vllm-flash-hnd -> sglang0523-host-page-head 0.77-0.78x / 1.24-1.26x of memcpy -> 0.91x / 1.42-1.47x,
// flashinfer-hnd -> sglang-host-page-head 0.77-0.78 -> 0.87-0.88. Without the condition on the writes
// (kMostStreams 32 for both), sources read through a slot table (SGLang's token pool, llama.cpp's cells)
// into vLLM 0.3.3's cross-layer blocks walked the slots outermost with every write scattered: sglang-mha ->
// vllm033-bhlnc 0.92-0.95 / 1.49 -> 0.51 / 0.79-0.83.
constexpr std::int64_t kMostReadStreams = 32;

// Runs of kLeastRunReadInManyStreams bytes or more keep the target's order over more than
// kMostReadStreams read streams, up to kMostLongRunReadStreams page-long ones, where it writes few
// (kMostStreams) and the source's order would write neither few nor that many page-long streams: the
// target's order then reads in streams the copy prefetches a run ahead (prefetch_step), the source's would
// scatter every run. DeepSeek's 1152-byte latents into SGLang's MLA page_first pool (a token's 61 layers
// together) from layer-major sources: the source's order read a block at a time (a box in quarters) and
// wrote each run 70 KiB from the last. kvlayout_bench_sweep --ab-source, each pair in one process, 7
// interleaved repetitions, 256 MiB, 1 / 2 threads, on an Ice Lake-class Xeon (2026-12-06): from
// sglang0523-host-mla-layer-first 0.68x / 0.68x of memcpy -> 0.84x / 0.89x, sglang-mla 0.63 / 0.61 ->
// 0.84 / 0.83, vllm033-mla-lbnhc 0.63 / 0.56 -> 0.89 / 0.85, vllm-mla 0.71 / 0.56 -> 0.77 / 0.76,
// lmcache-mla 0.80 / 0.67 -> 0.92 / 0.88, lmcache056-mla 0.80 / 0.81 -> 0.89 / 0.91,
// lmcache056-mla-layerwise 0.74 / 0.63 -> 0.83 / 0.76 (1.10-1.42x / 1.13-1.51x as fast). Without the
// condition on the source's order, pairs out of the page_first pools took the target's order too, reading
// each run a token (70 KiB, 128 KiB) from the last, and lost: sglang0523-host-mla-page-first -> vllm-mla
// 0.75 / 0.72 -> 0.48 / 0.49, sglang-host-page-first -> lmcache056-2ltd 0.85 / 0.86 -> 0.65 / 0.65; so did
// llama's lmcache056-t2d -> sglang0523-host-page-first (K's and V's runs interleaved in each read stream,
// which the stream count does not pass: 0.71 / 0.76 -> 0.58 / 0.63), and the page_first pools into their
// -direct twins (32 page-long write streams by the source) read 0.93-1.00x / 0.95-1.00x.
constexpr std::int64_t kLeastRunReadInManyStreams = 1024;
constexpr std::int64_t kMostLongRunReadStreams = 64;

// The longest run whose cell, kept in the target's order only by kMostReadStreams (17 to 32 read streams),
// carries the source's order beside it (CpuOrder::by_source) for the CPUs whose prefetchers do not follow
// that many streams: on an AMD EPYC (Zen 3, KVM) the source's order measured faster there, for short runs
// only. kvlayout_bench_sweep --ab KVLAYOUT_SOURCE_ORDER=off (256 MiB, 9 interleaved repetitions, 1 / 2
// threads, ratio to memcpy, the target's order -> the source's): 256-byte runs into SGLang's page_head pool
// from trtllm-pool 0.63x / 0.79x -> 1.17x / 0.96x, dynamo-universal 0.62 / 0.80 -> 1.00 / 0.92,
// vllm-flash-hnd 0.60 / 0.76 -> 0.74 / 0.77, hf-dynamic 0.70 / 0.84 -> 0.80 / 0.82, and out of SGLang's
// host pools into vLLM 0.3.3's and Dynamo's cross-layer blocks 0.69-0.77 / 0.83-0.89 -> 0.90-1.03 /
// 0.93-1.00 (12 pairs: 1.14-1.86x as fast at one thread, 0.98-1.21x at two); 2 KiB runs into the page_first
// pool measured mixed (1.09-1.48x at one thread, 0.68-1.12x at two: vllm-flash-nhd 0.72x -> 0.49x), so
// longer runs keep the target's order everywhere.
constexpr std::int64_t kLongestRunBySourceOnAmd = 512;

// The largest box, in bytes, whose loops are reordered by the source: a few paged blocks. Measured on 32 KiB
// blocks only; larger boxes keep the destination's order until a measurement says otherwise.
constexpr std::int64_t kSourceOrderedTileBytes = std::int64_t{256} << 10;

// The bytes from the first to the last element that `modes` (with the run) reach on side f.
std::int64_t span_bytes(const Cell& cell, const SideForm& f, const std::vector<int>& modes, std::int64_t element_bytes) {
  std::int64_t elements = cell.run_elements;
  for (int m : modes)
    elements += (cell.modes[static_cast<std::size_t>(m)].extent - 1) * std::abs(f.stride[static_cast<std::size_t>(m)]);
  return elements * element_bytes;
}

// Phase 5b's fallback: inside a block, read in the source's order. The reordered loops are the
// innermost ones that feed no table lookup and no instance choice and that, with the run, are one
// contiguous span of the source and span at most kSourceOrderedTileBytes in both layouts: the same bytes
// are read and written, in another order, within a window of a few blocks. Measured on
// vllm-flash-nhd -> vllm-flash-hnd (32 KiB blocks, 256-byte runs, random tables, one thread, 64-byte
// aligned tensors): 0.58x of memcpy in the destination's order, 0.82x in the source's.
void order_block_by_source(Cell& cell, std::int64_t element_bytes) {
  auto free_of_lookups = [&](int m) {
    return !cell.modes[static_cast<std::size_t>(m)].top_of_token && !read_by_atoms(cell.source, m) && !read_by_atoms(cell.target, m) &&
           !selects_instance(cell, m);
  };
  std::size_t from = cell.loops.size();
  while (from > 0 && free_of_lookups(cell.loops[from - 1])) --from;
  for (; from + 2 <= cell.loops.size(); ++from) {
    std::vector<int> box(cell.loops.begin() + static_cast<std::ptrdiff_t>(from), cell.loops.end());
    std::int64_t box_bytes = cell.run_elements * element_bytes;
    for (int m : box) box_bytes *= cell.modes[static_cast<std::size_t>(m)].extent;
    // Contiguous in the source (its span is its size), so that reading it in order is one sequential
    // stream; a source box with gaps (trtllm-pool's half blocks) measured slower read this way.
    if (span_bytes(cell, cell.source, box, element_bytes) != box_bytes || box_bytes > kSourceOrderedTileBytes ||
        span_bytes(cell, cell.target, box, element_bytes) > kSourceOrderedTileBytes)
      continue;
    std::vector<int> by_source = box;
    std::stable_sort(by_source.begin(), by_source.end(), [&](int a, int b) { return more_significant(cell, a, b, cell.source, cell.target); });
    if (by_source == box) return;  // the orders agree: nothing to change
    std::copy(by_source.begin(), by_source.end(), cell.loops.begin() + static_cast<std::ptrdiff_t>(from));
    cell.source_order_from = static_cast<int>(from);
    return;
  }
}

// Phase 5b: where each run is whole target lines, every loop in the source's physical order instead,
// unless that scatters the writes while the target's order reads a few sequential streams, each at least
// a page long (kLeastReadStreamBytes), or up to kMostReadStreams of them while writing a few (up to
// kMostLongRunReadStreams page-long ones for runs of kLeastRunReadInManyStreams); then
// (order_block_by_source) only inside a block, with the source's order kept beside it where the runs are
// short and only kMostReadStreams made the streams few (CpuOrder::by_source). Sequential reads are what the
// hardware prefetcher follows and a table the source is read through is read in the order of the source's
// blocks. Measured in one
// sweep each (kvlayout_bench_sweep, 256 MiB, the first 565 pairs, one thread): every loop by the source
// gave a median 1.08x the target's order and 293 -> 154 pairs below 0.8x memcpy, but halved pairs whose
// writes it scattered where the target's order read few streams (hf-dynamic -> vllm-flash-nhd 1.32x ->
// 0.89x memcpy: HF's per-head rows written 16 at a time into random blocks, against 8 read streams;
// dynamo-universal -> sglang-mha 0.82x -> 0.48x: 2 KiB rows into token slots across 64 tensors, against
// one). Keeping the target's order wherever the source's scatters the writes was worse (306 -> 261
// below 0.8x over the first 583): where both orders scatter, the source's still wins. lmcache-2ltd ->
// hf-dynamic (8 write streams by the source, reads 2 KiB apart by the target) in one process: 0.47x ->
// 0.85-0.94x. Writes the source's order gives in pieces of a page or more (contiguous_chunk) do not count
// as scattered: streaming stores complete those lines whatever the order. Measured on an Intel Xeon, one
// process, 1 / 2 threads: dynamo-universal -> vllm-flash-hnd (8 read streams of 8 KiB in the target's
// order; 4 KiB pieces into 64 tensors in the source's) 0.66-0.72x / 1.13-1.15x of memcpy -> 0.84-0.86x /
// 1.33-1.35x, lmcache-2ltd -> lmcache056-2td 0.81 / 1.27-1.29 -> 0.96-0.97 / 1.54; counted by
// streams_along (which joins 512-byte pieces continued by an outer loop into one stream), it also took
// vllm033-bhlnc -> vllm033-blnhc 1.02-1.06 -> 0.90-0.92.
// @post loops[source_order_from..] is where the order differs from the target's; -1 where it does not.
void order_by_source(Cell& cell, std::int64_t element_bytes) {
  if (cell.run.empty() || cell.tile_target_contiguous >= 0 || cell.loops.size() < 2) return;
  if (!runs_are_whole_target_lines(cell, element_bytes)) return;
  std::vector<int> by_source = cell.loops;
  std::stable_sort(by_source.begin(), by_source.end(), [&](int a, int b) { return more_significant(cell, a, b, cell.source, cell.target); });
  // The target's order's read streams, counted up to kMostReadStreams (a count of kMostStreams or fewer is
  // the same under either limit).
  const std::int64_t reads = streams_along(cell, cell.loops, cell.source, kLeastReadStreamBytes / element_bytes, kMostReadStreams);
  const bool target_order_writes_few = streams_along(cell, cell.loops, cell.target) <= kMostStreams;
  auto page_streams = [&](const std::vector<int>& loops, const SideForm& side) {
    return streams_along(cell, loops, side, kLeastReadStreamBytes / element_bytes, kMostLongRunReadStreams);
  };
  const bool long_runs_in_page_streams = cell.run_elements * element_bytes >= kLeastRunReadInManyStreams &&
                                         page_streams(cell.loops, cell.source) <= kMostLongRunReadStreams &&
                                         page_streams(by_source, cell.target) > kMostLongRunReadStreams;
  const bool target_order_reads_few = reads <= kMostStreams || (reads <= kMostReadStreams && target_order_writes_few) ||
                                      (long_runs_in_page_streams && target_order_writes_few);
  const bool writes_pages = contiguous_chunk(cell, by_source, cell.target) * element_bytes >= kLeastReadStreamBytes;
  const auto differ = std::mismatch(by_source.begin(), by_source.end(), cell.loops.begin());
  if (streams_along(cell, by_source, cell.target) > kMostStreams && !writes_pages && target_order_reads_few) {
    // The target's order reads a few streams, the source's would scatter the writes. Where only
    // kMostReadStreams made the streams few (measured on Intel), the source's order is kept beside it for
    // the CPUs whose prefetchers follow fewer (kLongestRunBySourceOnAmd).
    if (differ.first != by_source.end() && reads > kMostStreams && cell.run_elements * element_bytes <= kLongestRunBySourceOnAmd) {
      cell.cpu_order = CpuOrder::by_source;
      cell.cpu_loops = by_source;
      cell.cpu_loops_from = static_cast<int>(differ.first - by_source.begin());
    }
    order_block_by_source(cell, element_bytes);
    return;
  }
  if (differ.first == by_source.end()) return;  // the orders agree: nothing to change
  cell.source_order_from = static_cast<int>(differ.first - by_source.begin());
  cell.loops = std::move(by_source);
}

// Whether mode m picks the target's tensor instance and not the source's: a per-layer target's layer, from
// a source that keeps a token's layers inside one tensor (phases 5c and 5d).
bool picks_target_tensor_only(const Cell& cell, int m) {
  return selects_instance_of(cell, cell.target, m) && !selects_instance_of(cell, cell.source, m);
}

// Phase 5c: a transpose tile whose target picks its tensor instance by a mode the source keeps inside one
// tensor (a per-layer target, vLLM's legacy cache or llama.cpp's, from a source holding a token's layers
// together: SGLang's host pools, vLLM 0.3.3's cross-layer blocks, Dynamo's, TRT-LLM's pool) walks its
// loops in the source's physical order: the target's order (layer outermost) read each source page in 32
// passes a layer apart, a 256-byte piece each time; the source's reads a token's layers in turn. The
// tiles write whole lines either way. In one process each, 256 MiB, 1 / 2 threads:
// sglang-host-page-head -> vllm-paged-legacy 0.52-0.54x / 0.80-0.82x of memcpy -> 0.71x / 1.10-1.17x,
// sglang-host-page-first -> vllm-paged-legacy 0.76-0.80 / 1.26-1.31 -> 0.83-0.84 / 1.35-1.37,
// sglang-host-page-head -> llamacpp-vtrans 0.60 / 0.92-0.97 -> 0.67-0.70 / 1.09-1.10, vllm033-bhlnc ->
// llamacpp-vtrans 0.56-0.59 / 0.93-0.95 -> 0.62-0.63 / 0.99-1.00, dynamo-universal -> vllm-paged-legacy
// 0.67-0.69 / 1.07-1.15 -> 0.71-0.72 / 1.18; the others within noise (sglang-host-page-first-direct ->
// vllm-paged-legacy 0.85-0.88 -> 0.85). Not where both sides (or only the source) pick instances by the
// same mode: every tile transpose in the source's order measured mixed there (vllm-paged-legacy ->
// vllm033-lhbnc 0.82-0.83 -> 0.78-0.81, llamacpp-vtrans -> sglang-host-page-head 0.65-0.67 -> 0.58-0.61).
void order_tile_by_source(Cell& cell) {
  if (cell.tile_target_contiguous < 0 || cell.loops.size() < 2) return;
  if (std::none_of(cell.loops.begin(), cell.loops.end(), [&](int m) { return picks_target_tensor_only(cell, m); })) return;
  std::stable_sort(cell.loops.begin(), cell.loops.end(), [&](int a, int b) { return more_significant(cell, a, b, cell.source, cell.target); });
}

// Phase 5d: runs shorter than a target line (the legacy key cache's 16-byte packs) into a per-layer target
// from a source holding a token's layers together keep the target's order, but with the loop that picks
// the target's tensor sunk to just outside the first loop that steps less in the source: the runs' 2 x 2
// pairs stay innermost, and the layers of a token's row are read in turn. Only where it sinks past a loop
// that steps through the source's strides: past the block's table alone it gained nothing or lost. In
// one process each, 256 MiB, 1 / 2 threads (with the value tiles in the source's order, phase 5c):
// sglang-host-page-head -> vllm-paged-legacy 0.68-0.73x / 1.00-1.05x of memcpy -> 0.92-0.95x /
// 1.46-1.50x, sglang-host-page-first 0.79-0.82 / 1.23-1.25 -> 0.97-0.99 / 1.50-1.53, dynamo-universal
// 0.57-0.59 / 1.01-1.08 -> 0.69-0.70 / 1.05-1.14; past the table alone, trtllm-pool 0.75-0.77 -> 0.70,
// sglang-host-layer-first 0.86-0.88 -> 0.83-0.85. The source's order for every loop read the 16-byte runs
// scattered: 0.13x.
void sink_target_instance_loop(Cell& cell, std::int64_t element_bytes) {
  if (cell.tile_target_contiguous >= 0 || cell.run.empty() || runs_are_whole_target_lines(cell, element_bytes)) return;
  auto step = [&](int m) {  // the loop's step in the source; a table lookup steps anywhere
    return read_by_atoms(cell.source, m) ? INT64_MAX : std::abs(cell.source.stride[static_cast<std::size_t>(m)]);
  };
  for (std::size_t l = 0; l < cell.loops.size(); ++l) {
    const int m = cell.loops[l];
    if (!picks_target_tensor_only(cell, m)) continue;
    std::size_t to = l;
    bool past_a_stride = false;  // a loop it passes steps through the source's strides, not its table
    for (; to + 1 < cell.loops.size() && step(cell.loops[to + 1]) > step(m); ++to)
      if (step(cell.loops[to + 1]) != INT64_MAX) past_a_stride = true;
    if (!past_a_stride) return;
    std::rotate(cell.loops.begin() + static_cast<std::ptrdiff_t>(l), cell.loops.begin() + static_cast<std::ptrdiff_t>(l + 1),
                cell.loops.begin() + static_cast<std::ptrdiff_t>(to + 1));
    return;
  }
}

// Phase 5g, phase 5d's mirror image: runs shorter than a target line out of a per-layer source into a
// target holding a token's layers together (vLLM's legacy key packs into SGLang's page_first and page_head
// host pools). The target's order walks a few tokens across every layer, reading a 64-byte slice of each
// 256-byte piece of 32 source blocks in turn; with the loop that picks the source's tensor hoisted above
// the loops that step further in the target (up to the first that reads through a table: the block), each
// layer's block is read whole before the next layer's, and each token's row is still written a layer's
// piece (whole lines) at a time. Only past loops that interleave with the
// loops inside it in the source (a smaller source step than one of theirs: a token's packs between a
// head's): where the loops it would pass step over whole pieces of the source, each layer's piece is read
// whole either way. kvlayout_bench_sweep --ab-source (the previous order), 256 MiB, 7 interleaved
// repetitions, three processes, 1 / 2 threads, ratio to memcpy, previous -> hoisted: vllm-paged-legacy ->
// sglang-host-page-first 0.61-0.64x / 0.60-0.65x -> 0.67-0.70x / 0.69-0.72x, -> sglang-host-page-head
// 0.61-0.68 / 0.62-0.65 -> 0.67-0.71 / 0.70; hoisted past the head, whose 4 KiB pieces are whole in the source:
// -> dynamo-universal 0.79 / 0.75 -> 0.77 / 0.72, -> vllm033-bhlnc 0.67 / 0.67 -> 0.67 / 0.66.
// @post cell.loops holds the same loops; only the source's instance loop may have moved, and not past a
// loop that reads through a table or picks an instance.
void hoist_source_instance_loop(Cell& cell, std::int64_t element_bytes) {
  if (cell.tile_target_contiguous >= 0 || cell.run.empty() || runs_are_whole_target_lines(cell, element_bytes)) return;
  auto target_step = [&](int m) { return std::abs(cell.target.stride[static_cast<std::size_t>(m)]); };
  auto source_step = [&](int m) { return std::abs(cell.source.stride[static_cast<std::size_t>(m)]); };
  auto through_a_table = [&](int m) {
    return cell.modes[static_cast<std::size_t>(m)].top_of_token || read_by_atoms(cell.source, m) || read_by_atoms(cell.target, m) ||
           selects_instance(cell, m);
  };
  for (std::size_t l = 0; l < cell.loops.size(); ++l) {
    const int m = cell.loops[l];
    if (!selects_instance_of(cell, cell.source, m) || selects_instance_of(cell, cell.target, m) || read_by_atoms(cell.target, m)) continue;
    std::int64_t widest_inside = 0;  // the largest source step of the loops inside it
    for (std::size_t k = l + 1; k < cell.loops.size(); ++k) widest_inside = std::max(widest_inside, source_step(cell.loops[k]));
    std::size_t to = l;
    for (; to > 0; --to) {
      const int passed = cell.loops[to - 1];
      if (through_a_table(passed) || target_step(passed) <= target_step(m) || source_step(passed) >= widest_inside) break;
    }
    if (to == l) return;
    std::rotate(cell.loops.begin() + static_cast<std::ptrdiff_t>(to), cell.loops.begin() + static_cast<std::ptrdiff_t>(l),
                cell.loops.begin() + static_cast<std::ptrdiff_t>(l + 1));
    return;
  }
}

// Whether side f places single elements through a table a loop feeds (places_single_elements).
bool table_places_elements(const Cell& cell, const SideForm& f, std::int64_t element_bytes) {
  return std::any_of(f.atoms.begin(), f.atoms.end(), [&](const Atom& a) {
    return places_single_elements(a, element_bytes) && std::any_of(a.modes.begin(), a.modes.end(), [&](int m) { return contains(cell.loops, m); });
  });
}

// Phase 5e: a cell moved element by element whose source places its elements through a table and whose
// target does not (llama.cpp's transposed V, cells of a 4 KiB row per layer and head dim, into vLLM's
// legacy value blocks) walks the source's order: a source row stays in the first-level cache while its
// elements go out to every block's 32-byte piece, where the target's order (a block at a time) read 16
// elements from each of 1024 rows per block, a layer's 4 MiB of rows over again for every block. In one
// process, 256 MiB, 1 / 2 threads: llamacpp-vtrans -> vllm-paged-legacy 0.08x / 0.14x of memcpy -> 0.21-0.22x /
// 0.37-0.38x. The other way round (the target placed by the table) the target's order is already this
// walk.
void order_elements_by_scattered_source(Cell& cell, std::int64_t element_bytes) {
  if (cell.run_elements != 1 || cell.tile_target_contiguous >= 0 || cell.loops.size() < 2) return;
  if (!table_places_elements(cell, cell.source, element_bytes) || table_places_elements(cell, cell.target, element_bytes)) return;
  std::stable_sort(cell.loops.begin(), cell.loops.end(), [&](int a, int b) { return more_significant(cell, a, b, cell.source, cell.target); });
}

// How many tensor instances phase 5f's second order walks at a time, innermost: each piece of the target is
// that many runs long, and the source is read in as many streams. Measured on an AMD EPYC (Zen 3, KVM),
// kvlayout_bench_sweep --ab KVLAYOUT_INSTANCE_GROUPS=off, 256 MiB, five processes of 11 interleaved
// repetitions, the geometric mean of on / off at 1 / 2 threads (medians of the ratio to memcpy, on against
// off): into SGLang's page_head pool from vllm-flash-nhd 1.20x / 1.14x (0.99x / 0.96x of memcpy against 0.83x
// / 0.84x), lmcache056-2td 1.25 / 1.12, lmcache056-t2d 1.27 / 1.15, flashinfer-nhd 1.04 / 1.00,
// vllm-packed-hnd 1.07 / 1.00, vllm-packed-nhd 0.97 / 1.02; into the page_first pool (2 KiB runs, the layer
// innermost: 32 read streams) from vllm-flash-nhd 1.29 / 1.09 (0.96x / 0.96x against 0.75x / 0.89x),
// flashinfer-nhd 1.27 / 1.13, lmcache056-2td 1.32 / 1.16, lmcache056-t2d 1.12 / 1.04; two unchanged pairs
// timed beside them 0.98-1.01. Into the page_head pool where the layer is innermost (the target's order, 32
// read streams of 256-byte runs, with the source's beside it on AMD: CpuOrder::by_source), three processes
// each, the groups against the target's order and the source's against it: vllm-flash-hnd 1.39 / 1.26 and
// 1.23 / 1.10 (0.82x / 0.91x of memcpy in groups, 0.75x / 0.80x by the source), hf-dynamic 1.39 / 1.19 and
// 1.08 / 0.99 (0.98 / 0.98 against 0.78 / 0.81), flashinfer-hnd 1.44 / 1.23 and 1.26 / 1.06. Groups of 2 and
// 8, one process each over six of these pairs, were no better than 4 within this machine's noise. The mirror
// image (SGLang's page_head pool into per-layer caches, written in 4 streams instead of 32) measured 0.7x as
// fast (sglang-host-page-head -> vllm-flash-nhd 0.49x / 0.58x of memcpy against 0.66x / 0.75x), and in groups
// of 8 or 16 (two processes each, five such pairs) 0.66-0.75x and 0.74-0.88x at one thread, so it is not
// grouped. Sources read over an inverted table's slots (SGLang's token pool, llama.cpp's cells) gained
// nothing (sglang-mha -> sglang-host-page-head 0.68-0.69x either way) and are not grouped either. On an
// Intel Xeon (three processes of seven repetitions) only the groups in the source's order's place gained
// (CpuOrder::read_streams_in_groups, taken there too: see kv_read_streams_in_groups_wanted in cpu.cpp); the
// others read 0.88-1.04x / 0.83-1.06x and are AMD's alone.
constexpr std::int64_t kInstanceGroup = 4;

// Phase 5f, first half: the coordinate whose instances a second order would walk kInstanceGroup at a time
// (CpuOrder::instance_groups), or -1. The loop over it picks the source's tensor and not the target's (a
// per-layer source), is that coordinate's only digit, and steps the target by exactly one run (a target
// holding a token's layers together, next to the run); its runs are whole target lines. Where that loop
// is outermost, the order writes the target scattered, a run at a time; where innermost, it reads the
// source in one stream per instance, too many to be few: there the groups replace the source's order
// that phase 5b may have set beside it (CpuOrder::by_source), measured faster than that too. Not for a
// per-layer target (the mirror image, measured slower: see kInstanceGroup).
int grouped_instance_coord(const Cell& cell, std::int64_t element_bytes) {
  if (cell.run.empty() || cell.tile_target_contiguous >= 0 || cell.loops.size() < 2 || cell.cpu_order == CpuOrder::instance_groups ||
      cell.cpu_order == CpuOrder::read_streams_in_groups)
    return -1;
  if (!runs_are_whole_target_lines(cell, element_bytes)) return -1;
  for (const bool outermost : {true, false}) {
    const int m = outermost ? cell.loops.front() : cell.loops.back();
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    const CellCoordinate& coord = cell.coords[static_cast<std::size_t>(mode.coord)];
    if (!selects_instance_of(cell, cell.source, m) || selects_instance_of(cell, cell.target, m)) continue;
    if (coord.modes.size() != 1 || coord.lo != 0 || coord.guarded || mode.extent <= kInstanceGroup || mode.extent % kInstanceGroup != 0) continue;
    if (read_by_atoms(cell.target, m) || cell.target.stride[static_cast<std::size_t>(m)] != cell.run_elements) continue;
    if (streams_along(cell, cell.loops, outermost ? cell.target : cell.source) <= kMostStreams) continue;
    return mode.coord;
  }
  return -1;
}

// The most values phase 5h walks innermost: K and V.
constexpr std::int64_t kMostInterleavedValues = 2;

// Phase 5h from inside the outermost loop: the source holds the loop's values at least kLeastApartInSource
// bytes apart (FlashInfer's pages: a page's K, then its V, 32 KiB each), and the runs are at least
// kLeastInnerInterleavedRun bytes (a token's heads whole). Measured on the Zen 4 (2026-12-07,
// kvlayout_bench_sweep --ab KVLAYOUT_INTERLEAVED_ROWS=off, 256 MiB, two processes of 5 interleaved
// repetitions, 1 / 2 threads) over the 37 distinct kernels where a loop inside qualified without the run
// condition: 2 KiB runs, FlashInfer's NHD pages into LMCache's t2d objects (a token's K row next to its V
// row), 1.24-1.32x / 1.17-1.21x as fast (0.77x -> 0.99x of memcpy at one thread); 256-byte runs (a head's,
// into vLLM's packed pages, vLLM 0.3.3's, LMCache's packed and t2d objects) 0.93x / 0.96x at median, faster
// in 10-13 of 36, 0.63-1.28x / 0.83-1.16x.
constexpr std::int64_t kLeastApartInSource = kPageBytes;
constexpr std::int64_t kLeastInnerInterleavedRun = 2048;

// Phase 5h: a runs cell whose outermost loop takes at most kMostInterleavedValues values that the target
// interleaves within a page (kPageBytes; each row holds a head's K, then its V: vLLM's packed K/V pages,
// vLLM 0.3.3's) carries a second order with that loop innermost, just outside the run
// (CpuOrder::interleaved_rows). The walk takes the loop outermost where the source holds its values apart (K half, then V half: SGLang's
// host pools, LMCache's objects), so each target row is written in two passes, a half each time, and at
// two threads one thread writes every row's K, the other every V; innermost, each row is written whole
// from two read streams, as a sibling group writes two cells' runs side by side (sibling_cells.hpp).
// Measured on an AMD EPYC (Zen 4; 2026-12-07, kvlayout_bench_sweep --ab KVLAYOUT_INTERLEAVED_ROWS=off,
// 256 MiB, two processes of 5 interleaved repetitions, 1 / 2 threads) over the 32 distinct kernels that
// carry it (SGLang's host pools and LMCache's 2ltd objects into vLLM's packed pages, vLLM 0.3.3's,
// LMCache's packed and t2d objects; all 256-byte runs but one): 1.21x / 1.04-1.05x as fast at median,
// faster in 30 / 27-28 of 32, 0.88-1.40x / 0.93-1.43x (sglang-host-page-first -> vllm-packed-nhd 0.84x ->
// 1.12x of memcpy at one thread; the two slower, -> vllm033-lbnhc and -> lmcache056-packed, at 1.14-1.26x of
// memcpy either way). Not measured elsewhere (kv_interleaved_rows, emit/cpu.cpp). A loop further in takes
// the same order where the source holds its values a page or more apart and the runs are long
// (kLeastApartInSource): FlashInfer's NHD pages into LMCache's t2d objects, walked by page, then K's and
// V's 16 rows (32 KiB each), so each 4 KiB target row was written in two passes 32 KiB apart.
// @post where cpu_order was none and the loop qualifies, cpu_loops is loops with that loop moved last.
void add_interleaved_rows_order(Cell& cell, std::int64_t element_bytes) {
  if (cell.cpu_order != CpuOrder::none || cell.run.empty() || cell.tile_target_contiguous >= 0 || cell.loops.size() < 2) return;
  if (!runs_are_whole_target_lines(cell, element_bytes)) return;
  // A loop over at most kMostInterleavedValues values that the target interleaves within a page.
  auto interleaved_in_target = [&](int m) {
    const Mode& mode = cell.modes[static_cast<std::size_t>(m)];
    return mode.extent > 1 && mode.extent <= kMostInterleavedValues && !mode.top_of_token && !read_by_atoms(cell.source, m) &&
           !read_by_atoms(cell.target, m) && !selects_instance(cell, m) &&
           std::abs(cell.target.stride[static_cast<std::size_t>(m)]) * element_bytes < kPageBytes;
  };
  // The outermost loop that takes more than one value (a token's top digit takes one where the capacity
  // is a single page).
  const auto outer = std::find_if(cell.loops.begin(), cell.loops.end(), [&](int l) { return cell.modes[static_cast<std::size_t>(l)].extent > 1; });
  if (outer == cell.loops.end() || outer + 1 == cell.loops.end()) return;
  auto chosen = outer;
  if (!interleaved_in_target(*outer)) {
    // Or one further in, short of the innermost, whose values the source holds a page or more apart,
    // for long runs (kLeastApartInSource, kLeastInnerInterleavedRun).
    if (cell.run_elements * element_bytes < kLeastInnerInterleavedRun) return;
    chosen = std::find_if(outer + 1, cell.loops.end() - 1, [&](int m) {
      return interleaved_in_target(m) && std::abs(cell.source.stride[static_cast<std::size_t>(m)]) * element_bytes >= kLeastApartInSource;
    });
    if (chosen == cell.loops.end() - 1) return;
  }
  const auto at = chosen - cell.loops.begin();
  std::vector<int> innermost = cell.loops;
  std::rotate(innermost.begin() + at, innermost.begin() + at + 1, innermost.end());
  cell.cpu_order = CpuOrder::interleaved_rows;
  cell.cpu_loops = std::move(innermost);
  cell.cpu_loops_from = static_cast<int>(at);
}

// The variables of `modes`, in turn: how two makings of a cell (their mode numbers differ) compare.
std::vector<std::string> mode_vars(const Cell& cell, const std::vector<int>& modes) {
  std::vector<std::string> vars;
  for (int m : modes) vars.push_back(cell.modes[static_cast<std::size_t>(m)].var);
  return vars;
}

// Phase 5f, second half: `split` is `cell` made again with coordinate `coord` split at kInstanceGroup.
// Where its loops are cell's with that coordinate's one loop become its two digits in turn (the same walk)
// and its run is cell's, split gets the second order: the group digit outermost, the lower digit innermost
// (in place of any other second order: read_streams_in_groups in place of by_source, else instance_groups).
// @post true iff split.cpu_order is instance_groups or read_streams_in_groups.
bool add_instance_groups(Cell& split, const Cell& cell, int coord) {
  const auto& digits = split.coords[static_cast<std::size_t>(coord)].modes;  // most significant first
  if (digits.size() != 2 || mode_vars(split, split.run) != mode_vars(cell, cell.run) || split.cpu_order != cell.cpu_order) return false;
  std::vector<int> expected;  // cell's loops in split's mode numbers
  for (int m : cell.loops) {
    if (cell.modes[static_cast<std::size_t>(m)].coord == coord) {
      expected.insert(expected.end(), digits.begin(), digits.end());
      continue;
    }
    const std::string& var = cell.modes[static_cast<std::size_t>(m)].var;
    const auto same = std::find_if(split.modes.begin(), split.modes.end(), [&](const Mode& x) { return x.var == var; });
    expected.push_back(static_cast<int>(same - split.modes.begin()));
  }
  if (split.loops != expected) return false;
  const int group = digits.front(), inner = digits.back();
  std::vector<int> grouped{group};
  for (int m : split.loops)
    if (m != group && m != inner) grouped.push_back(m);
  grouped.push_back(inner);
  const auto differ = std::mismatch(grouped.begin(), grouped.end(), split.loops.begin());
  if (differ.first == grouped.end()) return false;
  split.cpu_order = cell.cpu_order == CpuOrder::by_source ? CpuOrder::read_streams_in_groups : CpuOrder::instance_groups;
  split.cpu_loops_from = static_cast<int>(differ.first - grouped.begin());
  split.cpu_loops = std::move(grouped);
  return true;
}

// A cell from a source and a target view (the declared ones, or rewritten by invert_cell); `names` and
// `token` as in split_into_modes.
Cell make_cell(const layout::BoundLayout& S, const layout::BoundLayout& T, std::pair<int, int> vs, std::pair<int, int> vt,
               const layout::BoundView& sv, const layout::BoundView& tv, const std::vector<std::string>& names,
               const layout::Cell& box, int token, const PlanOptions& options, const ExtraDivisors& extra = {}) {
  Cell cell;
  const std::vector<Digits> digits = split_into_modes(names, sv, tv, box, token, extra, cell);
  cell.source = side_form(S, vs.first, vs.second, sv, cell, digits);
  cell.target = side_form(T, vt.first, vt.second, tv, cell, digits);
  const std::vector<int> candidates = run_candidates(cell);
  find_common_run(cell, candidates);
  find_transpose_tile(cell, candidates);  // only when there is no common run
  const bool same_type = S.layout->dtype == T.layout->dtype;
  // Gathered rows copy elements unconverted (a converting move keeps one conversion per element).
  if (cell.run.empty() && cell.tile_target_contiguous < 0 && same_type) find_gathered_tile(cell, candidates);
  order_loops(cell);
  if (same_type) {
    const std::vector<int> by_target = cell.loops;
    order_by_source(cell, S.element_bytes());
    if (cell.source_order_from >= 0) cell.target_order_loops = by_target;
    order_tile_by_source(cell);
    sink_target_instance_loop(cell, S.element_bytes());
    hoist_source_instance_loop(cell, S.element_bytes());
    order_elements_by_scattered_source(cell, S.element_bytes());
    // Not over an inverted table's slots (token -1): there the groups measured no faster (kInstanceGroup).
    const bool groupable = options.group_instances && extra.empty() && token >= 0;
    if (const int coord = groupable ? grouped_instance_coord(cell, S.element_bytes()) : -1; coord >= 0) {
      Cell split = make_cell(S, T, vs, vt, sv, tv, names, box, token, options, {{coord, kInstanceGroup}});
      if (add_instance_groups(split, cell, coord)) return split;
    }
    add_interleaved_rows_order(cell, S.element_bytes());
  }
  return cell;
}

bool element_by_element(const Cell& cell) { return cell.run_elements == 1 && cell.tile_target_contiguous < 0; }

// `e` with the token replaced by the slot of an inverted table: on the inverted side its lookup
// `table[token]` becomes the slot itself; every other token becomes `inverse[slot]` (the side's index of
// the inverse). Coordinate `token` names the slot afterwards.
expr::Expr to_slot(const expr::Expr& e, int token, int inverted_table, int inverse_index) {
  if (inverted_table >= 0 && e->op == Op::Lookup && e->value == inverted_table && e->args[0]->op == Op::Coord && e->args[0]->value == token)
    return expr::coord(token, "slot");
  if (e->op == Op::Coord && e->value == token)
    return expr::lookup(inverse_index, "inverse", expr::coord(token, "slot"));
  if (e->args.empty()) return e;
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(to_slot(a, token, inverted_table, inverse_index));
  return std::make_shared<const expr::Node>(expr::Node{e->op, e->value, e->name, std::move(args)});
}

bool reads_token_table(const expr::Expr& e, int token, int table) {
  if (e->op == Op::Lookup && e->value == table && e->args[0]->op == Op::Coord && e->args[0]->value == token) return true;
  return std::any_of(e->args.begin(), e->args.end(), [&](const expr::Expr& a) { return reads_token_table(a, token, table); });
}

// Phase 6 (PlanOptions::invert_tables): a cell moved element by element, redone over the slots of a table
// read at `table[token]` on one side, when that gives it a tile. The whole token range must be in the
// cell (the slot then ranges over the table's whole range) and no instance may be chosen by the token.
// @post the returned cell's token coordinate is the slot, with CellCoordinate::inverse set; plan.inverses
// holds its table once.
// With `source_only`, only a source table is inverted, and the inverted cell must keep runs of `least_run`
// elements (phase 6b).
std::optional<Cell> invert_cell(const layout::BoundLayout& S, const layout::BoundLayout& T, std::pair<int, int> vs,
                                std::pair<int, int> vt, const layout::Cell& box, const PlanOptions& options, Plan& plan,
                                bool source_only = false, std::int64_t least_run = 1) {
  const int token = plan.token_coord;
  if (token < 0 || box.ranges[static_cast<std::size_t>(token)].lo != 0 ||
      box.ranges[static_cast<std::size_t>(token)].hi + 1 != plan.capacity)
    return std::nullopt;
  const auto& st = S.tensors[static_cast<std::size_t>(vs.first)];
  const auto& tt = T.tensors[static_cast<std::size_t>(vt.first)];
  if (st.per == token || tt.per == token) return std::nullopt;
  const auto& sv = st.views[static_cast<std::size_t>(vs.second)];
  const auto& tv = tt.views[static_cast<std::size_t>(vt.second)];
  for (bool on_source : {true, false}) {
    if (source_only && !on_source) continue;
    const layout::BoundLayout& X = on_source ? S : T;
    const layout::BoundView& xv = on_source ? sv : tv;
    for (std::size_t k = 0; k < X.tables.size(); ++k) {
      const int table = static_cast<int>(k);
      // The inverse is indexed by the entry itself: entries from 0, and no more slots than 4 per token, so
      // that it costs the kernel no more memory than its injectivity check already takes (16 bytes a token).
      const layout::BoundTable& entries = X.tables[k];
      if (entries.first < 0 || entries.end <= entries.first || (entries.end - 1) / 4 >= plan.capacity) continue;
      if (!std::any_of(xv.index.begin(), xv.index.end(), [&](const expr::Expr& e) { return reads_token_table(e, token, table); }))
        continue;
      auto known = std::find_if(plan.inverses.begin(), plan.inverses.end(),
                                [&](const InverseTable& i) { return i.on_source == on_source && i.table == table; });
      const int number = static_cast<int>(known - plan.inverses.begin());
      InverseTable inverse{on_source, table, entries.end, static_cast<int>(S.tables.size()) + number,
                           static_cast<int>(T.tables.size()) + number};
      layout::BoundView sv2 = sv, tv2 = tv;
      for (auto& e : sv2.index) e = to_slot(e, token, on_source ? table : -1, inverse.source_index);
      for (auto& e : tv2.index) e = to_slot(e, token, on_source ? -1 : table, inverse.target_index);
      layout::Cell slots = box;
      slots.ranges[static_cast<std::size_t>(token)] = {entries.first, entries.end - 1};
      std::vector<std::string> names = S.coord_names;
      names[static_cast<std::size_t>(token)] = "slot";
      Cell cell = make_cell(S, T, vs, vt, sv2, tv2, names, slots, -1, options);
      if (element_by_element(cell) || cell.run_elements < least_run) continue;
      cell.coords[static_cast<std::size_t>(token)].inverse = inverse.source_index;
      if (known == plan.inverses.end()) plan.inverses.push_back(inverse);
      return cell;
    }
  }
  return std::nullopt;
}

}  // namespace

Plan make_plan(const layout::BoundLayout& S, const layout::BoundLayout& T, const PlanOptions& options) {
  if (!S.fits() || !T.fits()) throw EmitError("both layouts must fit the cache shape");
  if (S.coord_names != T.coord_names) throw EmitError("the layouts hold different content");
  Plan plan;
  plan.token_coord = S.coord_index("token");
  plan.capacity = plan.token_coord >= 0 ? S.coord_extents[static_cast<std::size_t>(plan.token_coord)] : 0;
  auto ds = view_domains(S), dt = view_domains(T);
  std::vector<expr::Expr> predicates;
  for (const auto& d : ds) predicates.push_back(d.second);
  for (const auto& d : dt) predicates.push_back(d.second);
  auto boxes = layout::cells(S.coord_extents, predicates);
  if (!boxes) throw EmitError("a domain is not a combination of single-coordinate bounds");
  for (const auto& box : *boxes) {
    int s = -1, t = -1;
    for (std::size_t i = 0; i < ds.size(); ++i)
      if (box.truth[i]) s = static_cast<int>(i);
    for (std::size_t i = 0; i < dt.size(); ++i)
      if (box.truth[ds.size() + i]) t = static_cast<int>(i);
    if (s < 0 || t < 0) continue;  // not held by both: nothing moves here
    const std::pair<int, int> vs = ds[static_cast<std::size_t>(s)].first, vt = dt[static_cast<std::size_t>(t)].first;
    const auto& sv = S.tensors[static_cast<std::size_t>(vs.first)].views[static_cast<std::size_t>(vs.second)];
    const auto& tv = T.tensors[static_cast<std::size_t>(vt.first)].views[static_cast<std::size_t>(vt.second)];
    Cell cell = make_cell(S, T, vs, vt, sv, tv, S.coord_names, box, plan.token_coord, options);
    if (options.invert_tables && element_by_element(cell)) {
      if (std::optional<Cell> inverted = invert_cell(S, T, vs, vt, box, options, plan)) cell = std::move(*inverted);
    } else if (options.invert_tables && cell.tile_target_contiguous < 0) {
      // Phase 6b: runs whose source rows a per-token table places (SGLang's token pool, llama.cpp's cells)
      // are walked over that table's slots, so the source is read in its own order and the target written
      // in the table's: streamed whole-line writes in any order cost less than reads in any order
      // (measured with kvlayout_bench_sweep --roofline: sglang0523-mha -> sglang-mha's runs replayed in
      // source order 7.5 GiB/s, in target order 4.7, at one thread). Only where the runs are whole target
      // lines: shorter runs written in the table's order leave lines half-written. SGLang's token pool into
      // the legacy key cache's 16-byte x-packs, in one process, one thread, ratios over the pair's bytes:
      // the key move alone 0.24-0.26x -> 1.04-1.09x of memcpy by the target's order, the pair 0.20x -> 0.51x.
      std::optional<Cell> inverted = invert_cell(S, T, vs, vt, box, options, plan, true, cell.run_elements);
      if (inverted && runs_are_whole_target_lines(*inverted, T.element_bytes())) cell = std::move(*inverted);
    }
    plan.cells.push_back(std::move(cell));
  }
  std::set<std::string> seen;
  for (const auto* b : {&S, &T})
    for (const auto& t : b->tensors)
      for (const auto& v : t.views)
        for (const auto& e : v.index) collect_reads(e, b == &S, plan.token_coord, plan.reads, seen, *b);
  return plan;
}

bool in_tile(const Cell& cell, int m) {
  return cell.tile_target_contiguous >= 0 && (m == cell.tile_target_contiguous || m == cell.tile_source_contiguous || m == cell.tile_folded ||
                                              contains(cell.tile_target_merged, m) || contains(cell.tile_source_merged, m));
}

bool reads_tile_mode(const Cell& cell, const Atom& atom) {
  return std::any_of(atom.modes.begin(), atom.modes.end(), [&](int m) { return in_tile(cell, m); });
}

namespace {
// How describe() introduces a cell's second order: on which CPUs the kernel takes it, and why.
const char* second_order_label(CpuOrder order) {
  switch (order) {
    case CpuOrder::by_source: return " (on AMD CPUs, by the source:";
    case CpuOrder::instance_groups: return " (on AMD CPUs, instances in groups:";
    case CpuOrder::read_streams_in_groups: return " (on every CPU, instances in groups:";
    case CpuOrder::interleaved_rows: return " (on AMD CPUs with AVX-512, interleaved rows together:";
    case CpuOrder::none: break;
  }
  throw std::logic_error("a cell without a second order has no label for it");
}
}  // namespace

std::string describe(const Plan& plan, const layout::BoundLayout& S, const layout::BoundLayout& T) {
  std::string out;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    const Cell& c = plan.cells[i];
    const auto& st = S.tensors[static_cast<std::size_t>(c.source.tensor)];
    const auto& tt = T.tensors[static_cast<std::size_t>(c.target.tensor)];
    out += "cell " + std::to_string(i) + " (" + st.views[static_cast<std::size_t>(c.source.view)].name + " -> " +
           tt.views[static_cast<std::size_t>(c.target.view)].name + ";";
    for (const auto& cc : c.coords)
      if (cc.lo != 0 || cc.hi + 1 != S.coord_extents[static_cast<std::size_t>(&cc - &c.coords[0])])
        out += " " + cc.name + " " + std::to_string(cc.lo) + ".." + std::to_string(cc.hi);
    for (const auto& cc : c.coords)
      if (cc.inverse >= 0) {
        const InverseTable& inv = plan.inverses[static_cast<std::size_t>(cc.inverse - static_cast<int>(S.tables.size()))];
        out += " over the slots of " + std::string(inv.on_source ? "source" : "target") + " table " +
               (inv.on_source ? S : T).tables[static_cast<std::size_t>(inv.table)].name + ", inverted";
      }
    out += "): loops";
    for (std::size_t l = 0; l < c.loops.size(); ++l) {
      if (static_cast<int>(l) == c.source_order_from) out += " | in source order:";
      out += " " + c.modes[static_cast<std::size_t>(c.loops[l])].var;
    }
    if (c.cpu_order != CpuOrder::none) {
      out += second_order_label(c.cpu_order);
      for (int m : c.cpu_loops) out += " " + c.modes[static_cast<std::size_t>(m)].var;
      out += ")";
    }
    if (c.tile_target_contiguous >= 0) {
      std::string across = c.modes[static_cast<std::size_t>(c.tile_target_contiguous)].var;
      for (int m : c.tile_target_merged) across = c.modes[static_cast<std::size_t>(m)].var + "*" + across;
      std::string down = c.modes[static_cast<std::size_t>(c.tile_source_contiguous)].var;
      for (int m : c.tile_source_merged) down = c.modes[static_cast<std::size_t>(m)].var + "*" + down;
      out += "; 8 x 8 tiles transposing " + down + " (source-contiguous) and " +
             across + " (target-contiguous)";
      if (c.tile_target_rows_gathered) out += ", target rows placed one by one";
      if (c.tile_source_rows_gathered) out += ", source rows placed one by one";
      if (c.tile_folded >= 0) out += ", " + c.modes[static_cast<std::size_t>(c.tile_folded)].var + " walked inside the row blocks";
      for (int r : c.riders) out += ", cell " + std::to_string(r) + "'s runs copied from the same rows";
    } else {
      out += "; run " + std::to_string(c.run_elements) + " element(s)";
      for (int m : c.run) out += " " + c.modes[static_cast<std::size_t>(m)].var;
      if (c.ridden_by >= 0) out += ", inside cell " + std::to_string(c.ridden_by) + "'s row blocks";
    }
    out += "\n";
  }
  return out;
}

}  // namespace kvlayout::emit

#include "support/random_layout.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

namespace kvlayout::test {

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::int64_t Random::below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
// Strides and offsets at the edge of 64 bits: 2^62 doubles past it, 2^63 - 1 overflows with any addition,
// 3 * 3074457345618258603 = 2^63 + 1 overflows by one (a wrapped product looks small and in bounds), and
// 2^32 overflows int32 arithmetic.
const std::vector<std::int64_t> kHuge = {std::int64_t{1} << 62, kMax, 3074457345618258603, std::int64_t{1} << 32};

// ---- The model: a declaration before it is written as JSON, with each extent's value on `small` beside
// its text, so offsets, sizes and strides can be computed while generating.

struct Coord {
  std::string name, extent;
  std::int64_t size;
};

struct Content {
  std::string name;
  std::vector<Coord> coords;
  bool builtin = false;
};

struct Axis {
  std::string extent;
  std::int64_t size;
  std::string index;
  std::int64_t stride = 0;  // Strides::Explicit only
};

enum class Strides { RowMajor, Order, Explicit };

struct View {
  std::string name;   // several views only
  std::string holds;  // empty: everything the layout holds
  std::int64_t offset = 0;
  std::vector<Axis> axes;
  Strides strides = Strides::RowMajor;
  std::vector<int> order;  // Strides::Order
};

struct Tensor {
  std::string name, per;
  std::vector<View> views;
  std::optional<std::int64_t> size;  // explicit allocation size; a tensor of several views has one
  bool size_as_shape = false;        // several views: written as "shape": [size] instead of "size"
};

struct Table {
  std::string name, length;
  std::int64_t blocks, first, end;
};

struct Model {
  Content content;
  std::string dtype = "bf16";
  bool scale = false;
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<std::string> requirements;
  std::vector<Table> tables;
  std::string holds;
  std::vector<Tensor> tensors;
  // "per_range": [first, end] on every tensor with "per" (a pipeline stage's instances); usually matched
  // by the domain, sometimes not (then a held position has no instance: out of bounds).
  std::optional<std::pair<std::int64_t, std::int64_t>> per_range;
};

// One coordinate as a view sees it: an expression numbering the values the view holds from 0 (`x`, or
// `(x - 3)` in a view holding x >= 3), how many there are, and the text of that count. Always an atom.
struct Term {
  std::string text, extent;
  std::int64_t n;
};

std::string str(std::int64_t v) { return std::to_string(v); }

bool is_atom(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}
std::string atom(const std::string& s) { return is_atom(s) ? s : "(" + s + ")"; }

// Saturating, so that a huge stride makes a huge (not a wrapped) allocation estimate.
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}

// The strides the binder derives (row-major, permuted by the stride order) or the explicit ones.
std::vector<std::int64_t> strides_of(const View& v) {
  std::vector<std::int64_t> s(v.axes.size());
  if (v.strides == Strides::Explicit) {
    for (std::size_t k = 0; k < s.size(); ++k) s[k] = v.axes[k].stride;
    return s;
  }
  std::vector<int> order = v.order;
  if (v.strides == Strides::RowMajor || order.size() != s.size()) {
    order.clear();
    for (std::size_t k = 0; k < s.size(); ++k) order.push_back(static_cast<int>(k));
  }
  std::int64_t stride = 1;
  for (std::size_t j = s.size(); j-- > 0;) {
    s[static_cast<std::size_t>(order[j])] = stride;
    stride = sat_mul(stride, v.axes[static_cast<std::size_t>(order[j])].size);
  }
  return s;
}

// One past the largest offset the view reaches (CuTe's cosize).
std::int64_t cosize(const View& v) {
  std::vector<std::int64_t> s = strides_of(v);
  std::int64_t last = v.offset;
  for (std::size_t k = 0; k < s.size(); ++k) last = sat_add(last, sat_mul(v.axes[k].size - 1, s[k]));
  return sat_add(last, 1);
}

template <class T>
void shuffle(Random& r, std::vector<T>& v) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(i)))]);
}

std::vector<int> permutation(Random& r, std::size_t n) {
  std::vector<int> p;
  for (std::size_t k = 0; k < n; ++k) p.push_back(static_cast<int>(k));
  shuffle(r, p);
  return p;
}

// Row-major strides over a random physical order, sometimes with gaps (padding) between axes.
void make_explicit(Random& r, View& v) {
  std::vector<int> physical = permutation(r, v.axes.size());
  std::int64_t running = 1;
  for (std::size_t j = physical.size(); j-- > 0;) {
    Axis& a = v.axes[static_cast<std::size_t>(physical[j])];
    // A one-value axis is never multiplied by anything but 0: any stride, 2^62 included, must be harmless.
    a.stride = a.size == 1 && r.chance(40) ? r.pick(std::vector<std::int64_t>{0, kHuge[0], kHuge[1], kHuge[2]}) : running;
    running = sat_add(sat_mul(running, a.size), r.chance(15) ? r.between(1, 3) : 0);
  }
  v.strides = Strides::Explicit;
}

void choose_strides(Random& r, View& v) {
  int k = static_cast<int>(r.below(100));
  if (k < 40) v.strides = Strides::RowMajor;
  else if (k < 70) {
    v.strides = Strides::Order;
    v.order = permutation(r, v.axes.size());
  } else
    make_explicit(r, v);
}

// ---- Generation.

std::string ceil_text(const std::string& extent, std::int64_t n, const std::string& b, std::int64_t bv) {
  if (is_atom(extent) && std::isdigit(static_cast<unsigned char>(extent[0])) && is_atom(b) && std::isdigit(static_cast<unsigned char>(b[0])))
    return str((n + bv - 1) / bv);
  return "ceil_div(" + extent + ", " + b + ")";
}

// An index that is the term itself, written another way (the normaliser must see through each).
std::string identity_index(Random& r, const Term& t) {
  switch (r.below(6)) {
    case 0: return "min(" + t.text + ", " + str(t.n - 1) + ")";
    case 1: return "max(" + t.text + ", 0)";
    case 2: return "ceil_div(" + t.text + ", 1)";
    case 3: return t.text + " % " + atom(t.extent);
    case 4: return t.text + " / 1";
    default: return t.text + " + 0";
  }
}

// The axes that store one term: plain, split into blocks, or paged through a block table.
std::vector<Axis> axes_for(Random& r, Model& m, const Term& t) {
  if (t.n == 1 && r.chance(50)) return {};  // one value: the view needs no axis for it
  const int kind = t.n >= 2 ? static_cast<int>(r.below(100)) : 0;
  if (kind < 45) return {Axis{t.extent, t.n, r.chance(20) ? identity_index(r, t) : t.text}};
  std::vector<std::int64_t> sizes;
  for (std::int64_t b : {2, 3, 4, 8, 16, 32})
    if (b < t.n) sizes.push_back(b);
  if (sizes.empty()) sizes.push_back(t.n);
  const std::int64_t bv = r.pick(sizes);
  std::string b = str(bv);
  if (r.chance(30)) {
    b = "bs" + str(static_cast<std::int64_t>(m.params.size()));
    m.params.push_back({b, str(bv)});
  }
  const std::string blocks = ceil_text(t.extent, t.n, b, bv);
  const std::int64_t nb = (t.n + bv - 1) / bv;
  const std::string slot = t.text + " % " + b;
  if (kind < 75) {
    std::vector<Axis> out = {Axis{blocks, nb, t.text + " / " + b}, Axis{b, bv, slot}};
    if (r.chance(20)) std::swap(out[0], out[1]);
    return out;
  }
  // SGLang's reserved pages: entries from `first`; spare blocks at the end of the range.
  const std::int64_t first = r.chance(30) ? r.between(1, 2) : 0;
  const std::int64_t end = first + nb + (r.chance(30) ? r.between(1, 3) : 0);
  Table table{"bt" + str(static_cast<std::int64_t>(m.tables.size())), blocks, nb, first, end};
  m.tables.push_back(table);
  const std::string lookup = table.name + "[" + t.text + " / " + b + "]";
  const std::string pages = first == 0 && end == nb ? blocks : str(end);
  if (r.chance(30)) return {Axis{atom(pages) + " * " + b, end * bv, lookup + " * " + b + " + " + slot}};
  return {Axis{pages, end, lookup}, Axis{b, bv, slot}};
}

View view_for(Random& r, Model& m, std::vector<Term> terms, const std::string& holds) {
  shuffle(r, terms);
  View v;
  v.holds = holds;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (i + 1 < terms.size() && r.chance(12)) {  // two coordinates packed in one axis (K||V, head*dim)
      const Term &a = terms[i], &b = terms[i + 1];
      v.axes.push_back(Axis{atom(a.extent) + " * " + atom(b.extent), a.n * b.n, a.text + " * " + atom(b.extent) + " + " + b.text});
      ++i;
      continue;
    }
    for (const Axis& a : axes_for(r, m, terms[i])) v.axes.push_back(a);
  }
  if (v.axes.empty() || r.chance(8)) {  // a broadcast axis of one value
    auto at = v.axes.begin() + r.below(static_cast<std::int64_t>(v.axes.size()) + 1);
    v.axes.insert(at, Axis{"1", 1, "0"});
  }
  choose_strides(r, v);
  return v;
}

// A restriction of one term, for a layout's domain or to split it between views or tensors.
struct Split {
  std::size_t term;
  std::int64_t at;
};

std::optional<Split> splittable(Random& r, const std::vector<Term>& terms) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms[i].n >= 2) candidates.push_back(i);
  if (candidates.empty()) return std::nullopt;
  std::size_t i = r.pick(candidates);
  return Split{i, r.between(1, terms[i].n - 1)};
}

// Restricts the layout's domain; the axes then shrink to fit it or keep the padding.
void restrict_domain(Random& r, Model& m, std::vector<Term>& terms) {
  auto s = splittable(r, terms);
  if (!s) return;
  Term& t = terms[s->term];
  const std::int64_t k = s->at;
  const bool narrow = r.chance(60);
  switch (r.below(5)) {
    case 0:
      m.holds = t.text + " < " + str(k);
      if (narrow) t = Term{t.text, str(k), k};
      break;
    case 1:
      m.holds = t.text + " >= " + str(k);
      if (narrow) t = Term{"(" + t.text + " - " + str(k) + ")", str(t.n - k), t.n - k};
      break;
    case 2:
      m.holds = t.text + " % 2 == 0";
      if (narrow) t = Term{"(" + t.text + " / 2)", str((t.n + 1) / 2), (t.n + 1) / 2};
      break;
    case 3: m.holds = t.text + " / 2 != " + str(k / 2); break;
    default: m.holds = t.text + " != " + str(k); break;
  }
}

Model random_model(Random& r, const Content& c) {
  Model m;
  m.content = c;
  if (r.chance(15)) m.dtype = r.pick(std::vector<std::string>{"fp16", "fp32", "fp8_e4m3", "int8"});
  m.scale = r.chance(4);
  std::vector<Term> terms;
  for (const Coord& k : c.coords) terms.push_back(Term{k.name, k.extent, k.size});
  if (r.chance(15)) restrict_domain(r, m, terms);
  std::string per;
  if (r.chance(40)) {
    std::size_t i = c.builtin && r.chance(70) ? 0 : static_cast<std::size_t>(r.below(static_cast<std::int64_t>(terms.size())));
    if (terms[i].text == c.coords[i].name) {  // the instance is the coordinate itself, never a shifted term
      per = terms[i].text;
      const std::int64_t n = terms[i].n;
      terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(i));
      if (n > 1 && r.chance(30)) {
        const std::int64_t first = r.below(n), end = first + 1 + r.below(n - first);
        m.per_range = {first, end};
        if (r.chance(75))
          m.holds = (m.holds.empty() ? "" : "(" + m.holds + ") && ") + per + " >= " + str(first) + " && " + per + " < " + str(end);
      }
    }
  }
  const int shape = static_cast<int>(r.below(100));
  auto split = shape < 30 ? splittable(r, terms) : std::nullopt;
  if (split) {  // the domain split at one term between two views of one allocation, or two tensors
    std::vector<Term> lo = terms, hi = terms;
    const Term& t = terms[split->term];
    lo[split->term] = Term{t.text, str(split->at), split->at};
    hi[split->term] = Term{"(" + t.text + " - " + str(split->at) + ")", str(t.n - split->at), t.n - split->at};
    View a = view_for(r, m, lo, t.text + " < " + str(split->at));
    View b = view_for(r, m, hi, t.text + " >= " + str(split->at));
    if (shape < 12) {
      m.tensors.push_back(Tensor{"lo", per, {a}, std::nullopt, false});
      m.tensors.push_back(Tensor{"hi", per, {b}, std::nullopt, false});
    } else {
      a.name = "lo";
      b.name = "hi";
      b.offset = sat_add(cosize(a), r.chance(20) ? r.between(1, 4) : 0);
      m.tensors.push_back(Tensor{"cache", per, {a, b}, sat_add(cosize(b), r.chance(20) ? r.between(1, 3) : 0), r.chance(50)});
    }
  } else {
    View v = view_for(r, m, terms, "");
    std::optional<std::int64_t> size;
    if (r.chance(15)) size = sat_add(cosize(v), r.between(0, 5));
    m.tensors.push_back(Tensor{"cache", per, {v}, size, false});
  }
  if (r.chance(8)) m.requirements.push_back(m.params.empty() ? "num_tokens >= 1" : m.params[0].first + " % 2 == 0");
  if (r.chance(3)) m.requirements.push_back("num_layers > 2");  // false on small: does not fit
  return m;
}

// ---- Mutations: each edits a model in one small way and names what it did ("" when it does not apply).

std::vector<View*> views_of(Model& m) {
  std::vector<View*> out;
  for (Tensor& t : m.tensors)
    for (View& v : t.views) out.push_back(&v);
  return out;
}

Tensor& tensor_of(Model& m, const View* v) {
  for (Tensor& t : m.tensors)
    for (const View& w : t.views)
      if (&w == v) return t;
  return m.tensors.front();
}

// Explicit strides equal to the ones the view has now, and an explicit size equal to its allocation, so
// that a later edit of one stride or extent changes nothing else.
void pin(View& v, Tensor& t) {
  if (!t.size) t.size = cosize(v);
  std::vector<std::int64_t> s = strides_of(v);
  for (std::size_t k = 0; k < s.size(); ++k) v.axes[k].stride = s[k];
  v.strides = Strides::Explicit;
}

std::string restride(Random& r, Model& m) {
  choose_strides(r, *r.pick(views_of(m)));
  return "strides redrawn";
}

std::string extent_off_by_one(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  Axis& a = v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))];
  a.size += a.size > 1 && r.chance(50) ? -1 : 1;
  a.extent = str(a.size);
  return "an extent off by one";
}

std::string indices_swapped(Random& r, Model& m) {
  std::vector<View*> views;
  for (View* v : views_of(m))
    if (v->axes.size() >= 2) views.push_back(v);
  if (views.empty()) return "";
  View& v = *r.pick(views);
  std::vector<int> p = permutation(r, v.axes.size());
  std::swap(v.axes[static_cast<std::size_t>(p[0])].index, v.axes[static_cast<std::size_t>(p[1])].index);
  return "two indices swapped";
}

std::string lossy_index(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  Axis& a = v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))];
  const std::string i = "(" + a.index + ")";
  switch (r.below(6)) {
    case 0: a.index = "min(" + i + ", " + str(std::max<std::int64_t>(a.size - 2, 0)) + ")"; break;
    case 1: a.index = i + " / 2"; break;
    case 2: a.index = "0"; break;
    case 3: a.index = i + " + 1"; break;
    case 4: a.index = "max(" + i + " - 1, 0)"; break;
    default: a.index = i + " % 2"; break;
  }
  return "a lossy index `" + a.index + "`";
}

std::string stride_typo(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  pin(v, tensor_of(m, &v));
  Axis& a = v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))];
  switch (r.below(4)) {
    case 0: ++a.stride; return "a stride one too large";
    case 1: a.stride = std::max<std::int64_t>(a.stride - 1, 0); return "a stride one too small";
    case 2: a.stride = 0; return "a zero stride";
    default: a.stride = r.pick(kHuge); return "a stride of " + str(a.stride) + " (allocation kept)";
  }
}

std::string huge_stride_unsized(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  if (tensor_of(m, &v).size) return "";
  make_explicit(r, v);
  v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))].stride = r.pick(kHuge);
  return "a huge stride, allocation from the cosize";
}

std::string huge_extent(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  pin(v, tensor_of(m, &v));
  Axis& a = v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))];
  a.extent = str(r.pick(kHuge));  // the index stays small: same addresses, a huge declared extent
  return "an extent of " + a.extent + " (strides and allocation kept)";
}

std::string huge_offset(Random& r, Model& m) {
  View& v = *r.pick(views_of(m));
  Tensor& t = tensor_of(m, &v);
  if (!t.size) t.size = cosize(v);
  v.offset = r.chance(50) ? r.pick(kHuge) : kMax - r.between(0, 100);
  return "a view offset of " + str(v.offset);
}

std::string view_offset(Random& r, Model& m) {
  for (Tensor& t : m.tensors)
    if (t.views.size() > 1) {
      View& v = t.views.back();
      v.offset = r.chance(30) ? 0 : std::max<std::int64_t>(v.offset + r.pick(std::vector<std::int64_t>{-3, -1, 1, 2}), 0);
      return "the second view's offset moved to " + str(v.offset);
    }
  return "";
}

std::string narrow_domain(Random& r, Model& m) {
  const Coord& c = r.pick(m.content.coords);
  if (c.size < 2) return "";
  const std::int64_t k = r.between(1, c.size - 1);
  std::string cond = r.pick(std::vector<std::string>{c.name + " < " + str(k), c.name + " != " + str(k), c.name + " % 2 == 1"});
  m.holds = m.holds.empty() ? cond : "(" + m.holds + ") && " + cond;
  return "the domain narrowed by `" + cond + "`";
}

std::string widen_domain(Random&, Model& m) {
  if (m.holds.empty()) return "";
  m.holds.clear();
  return "the layout's domain dropped";
}

std::string retype(Random& r, Model& m) {
  std::vector<std::string> others;
  for (std::string d : {"bf16", "fp16", "fp32", "fp8_e4m3", "int8"})
    if (d != m.dtype) others.push_back(d);
  m.dtype = r.pick(others);
  if (r.chance(30)) m.scale = !m.scale;
  return "element type " + m.dtype + (m.scale ? " with a scale" : "");
}

std::string table_range(Random& r, Model& m) {
  if (m.tables.empty()) return "";
  Table& t = m.tables[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(m.tables.size())))];
  switch (r.below(3)) {
    case 0: --t.end; break;
    case 1: t.end += 2; break;
    default: ++t.first; break;
  }
  return "table " + t.name + " range [" + str(t.first) + ", " + str(t.end) + ")";
}

std::string divide_by_zero(Random& r, Model& m) {
  bool has_zero = false;
  for (const auto& p : m.params) has_zero = has_zero || p.first == "zero";
  if (!has_zero) m.params.push_back({"zero", "num_layers - 2"});  // 0 on small
  const std::string c = r.pick(m.content.coords).name;
  std::string what;
  switch (r.below(5)) {
    case 0: what = c + " / zero == 0"; break;
    case 1: what = "12 / " + c + " >= 0"; break;               // divides by zero where c == 0
    case 2: what = c + " == 0 || 12 / " + c + " >= 1"; break;  // the same, guarded
    case 3: {
      View& v = *r.pick(views_of(m));
      Axis& a = v.axes[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(v.axes.size())))];
      a.index = "(" + a.index + ") + " + c + " % zero";
      return "an index `" + a.index + "` that divides by zero";
    }
    default:
      m.params.push_back({"per_zero", "num_tokens / zero"});
      m.requirements.push_back("per_zero >= 0");
      return "a parameter that divides by zero";
  }
  m.holds = m.holds.empty() ? what : "(" + m.holds + ") && (" + what + ")";
  return "a domain `" + what + "` that divides by zero";
}

std::string content_extent(Random& r, Model& m) {
  if (m.content.builtin) return "";
  Coord& c = m.content.coords[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(m.content.coords.size())))];
  const std::string before = c.extent;
  c.size += c.size > 1 && r.chance(50) ? -1 : 1;
  c.extent = str(c.size);
  return "content extent " + c.name + " " + before + " -> " + c.extent;
}

std::string content_renamed(Random& r, Model& m) {
  if (m.content.builtin) return "";
  if (r.chance(50) || m.content.coords.size() < 2) {
    m.content.name += "2";
    return "content renamed " + m.content.name;
  }
  std::swap(m.content.coords[0], m.content.coords[1]);
  return "content coordinates reordered";
}

using Mutation = std::string (*)(Random&, Model&);
const std::vector<Mutation> kMutations = {
    restride,      extent_off_by_one, indices_swapped, lossy_index,    stride_typo,    huge_stride_unsized,
    huge_extent,   huge_offset,       view_offset,     narrow_domain,  widen_domain,   retype,
    table_range,   divide_by_zero,    content_extent,  content_renamed};

std::string mutate(Random& r, Model& m) {
  for (;;)
    if (std::string what = r.pick(kMutations)(r, m); !what.empty()) return what;
}

// ---- Contents and JSON.

Content kv_heads() {
  return Content{"kv-heads",
                 {{"layer", "num_layers", 2}, {"kv", "2", 2}, {"token", "num_tokens", 67}, {"head", "num_kv_heads", 4},
                  {"dim", "head_size", 16}},
                 true};
}

// A custom content of two or three coordinates with small extents, literal or read from the cache shape.
Content grid(Random& r) {
  const std::vector<Coord> extents = {{"", "1", 1}, {"", "2", 2}, {"", "3", 3}, {"", "4", 4}, {"", "5", 5},
                                      {"", "num_layers", 2}, {"", "num_kv_heads", 4}, {"", "head_size / 4", 4}};
  Content c{"grid", {}, false};
  const std::vector<std::string> names = {"x", "y", "z"};
  for (std::int64_t i = 0, n = r.between(2, 3); i < n; ++i) {
    Coord k = r.pick(extents);
    k.name = names[static_cast<std::size_t>(i)];
    c.coords.push_back(k);
  }
  if (r.chance(25)) c.coords[static_cast<std::size_t>(r.below(static_cast<std::int64_t>(c.coords.size())))] = {"token", "num_tokens", 67};
  return c;
}

// The same coordinates with other extents (a second grid of the same name).
Content regrid(Random& r, Content c) {
  for (Coord& k : c.coords)
    if (r.chance(50)) {
      k.size = std::max<std::int64_t>(1, k.size + r.pick(std::vector<std::int64_t>{-1, 1, 2}));
      k.extent = str(k.size);
    }
  return c;
}

std::string describe(const Content& c) {
  if (c.builtin) return c.name;
  std::string s = c.name + "(";
  for (std::size_t i = 0; i < c.coords.size(); ++i) s += (i ? ", " : "") + c.coords[i].name + " " + c.coords[i].extent;
  return s + ")";
}

// Integers as JSON numbers, expressions as strings, as the shipped specs write them.
spec::Json value(const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    try {
      return std::stoll(text);
    } catch (const std::out_of_range&) {
    }
  }
  return text;
}

spec::Json with_view(spec::Json j, const View& v) {
  if (!v.holds.empty()) j["holds"] = v.holds;
  if (v.offset) j["offset"] = v.offset;
  spec::Json shape = spec::Json::array(), index = spec::Json::array(), strides = spec::Json::array();
  for (const Axis& a : v.axes) {
    shape.push_back(value(a.extent));
    index.push_back(a.index);
    strides.push_back(a.stride);
  }
  j["shape"] = shape;
  j["index"] = index;
  if (v.strides == Strides::Order) j["stride_order"] = v.order;
  if (v.strides == Strides::Explicit) j["strides"] = strides;
  return j;
}

spec::Json to_json(const Model& m, const std::string& name) {
  spec::Json j = {{"name", name}, {"engine", "random (tests/support/random_layout.cpp)"}, {"control", true},
                  {"content", m.content.name}};
  if (!m.content.builtin) {
    spec::Json coords = spec::Json::object();
    for (const Coord& c : m.content.coords) coords[c.name] = value(c.extent);
    j["coords"] = coords;
  }
  j["dtype"] = m.dtype;
  if (m.scale) j["scale"] = {{"dtype", "fp32"}, {"per", spec::Json::array({m.content.coords.front().name})}};
  if (!m.params.empty()) {
    spec::Json params = spec::Json::object();
    for (const auto& [n, v] : m.params) params[n] = value(v);
    j["params"] = params;
  }
  if (!m.requirements.empty()) j["requires"] = m.requirements;
  if (!m.tables.empty()) {
    spec::Json tables = spec::Json::object();
    for (const Table& t : m.tables) {
      spec::Json range = t.first == 0 && t.end == t.blocks ? value(t.length) : spec::Json::array({t.first, t.end});
      tables[t.name] = {{"length", value(t.length)}, {"range", range}};
    }
    j["tables"] = tables;
  }
  if (!m.holds.empty()) j["holds"] = m.holds;
  spec::Json tensors = spec::Json::array();
  for (const Tensor& t : m.tensors) {
    spec::Json tj = {{"name", t.name}};
    if (!t.per.empty()) tj["per"] = t.per;
    if (!t.per.empty() && m.per_range) tj["per_range"] = spec::Json::array({m.per_range->first, m.per_range->second});
    if (t.views.size() == 1) {
      if (t.size) tj["size"] = *t.size;
      tensors.push_back(with_view(tj, t.views.front()));
      continue;
    }
    if (t.size_as_shape) tj["shape"] = spec::Json::array({*t.size});
    else tj["size"] = *t.size;
    spec::Json views = spec::Json::array();
    for (const View& v : t.views) views.push_back(with_view({{"name", v.name}}, v));
    tj["views"] = views;
    tensors.push_back(tj);
  }
  j["tensors"] = tensors;
  return j;
}

}  // namespace

RandomPair random_pair(std::uint64_t seed, std::uint64_t index) {
  Random r(Random(seed).next() + index * 0xd1342543de82ef95ull);
  const Content content = r.chance(45) ? kv_heads() : grid(r);
  Model source = random_model(r, content);
  Model target = source;
  std::string how;
  const int kind = static_cast<int>(r.below(100));
  if (kind < 12) {
    how = "self pair";
  } else if (kind < 40) {
    const bool regridded = !content.builtin && r.chance(25);
    target = random_model(r, regridded ? regrid(r, content) : content);
    how = regridded ? "independent, other extents " + describe(target.content) : "independent";
  } else {
    how = "mutation: " + mutate(r, target);
    if (r.chance(25)) how += "; " + mutate(r, target);
  }
  if (r.chance(50)) {
    std::swap(source, target);
    how += " (source and target swapped)";
  }
  return {to_json(source, "source"), to_json(target, "target"), describe(content) + "; " + how};
}

}  // namespace kvlayout::test

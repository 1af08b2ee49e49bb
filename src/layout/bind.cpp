#include <algorithm>
#include <limits>

#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "layout/bound_layout.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"
#include "spec/name_check.hpp"
#include "spec/parameter_order.hpp"

namespace kvlayout::layout {
namespace {

using spec::SourceExpr;
using spec::SpecError;

class Binder {
 public:
  Binder(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& cache, const Overrides& overrides)
      : L_(*layout), overrides_(overrides) {
    out_.layout = std::move(layout);
    out_.cache = cache;
  }

  BoundLayout run() {
    bind_values();
    if (!out_.fits()) return std::move(out_);
    check_requirements();
    if (!out_.fits()) return std::move(out_);
    for (const auto& c : L_.content.coords) {
      out_.coord_names.push_back(c.name);
      out_.coord_extents.push_back(positive(c.extent, "a positive coordinate extent"));
    }
    check_box_fits();
    for (const auto& t : L_.tables) bind_table(t);
    for (const auto& t : L_.tensors) bind_tensor(t);
    check_storage();
    return std::move(out_);
  }

 private:
  const std::string& file() const { return L_.file; }

  [[noreturn]] void fail(const SourceExpr& e, const std::string& problem, const std::string& expected) const {
    throw SpecError(file(), e.path, "`" + e.text + "`, which " + problem + " on cache shape " + out_.cache.name,
                    expected);
  }

  std::int64_t constant(const SourceExpr& e) const {
    try {
      expr::Expr bound = expr::substitute(
          e.expr, [&](const std::string& n) { return expr::literal(out_.values.at(n)); },
          [](const std::string&) -> int { throw std::logic_error("table in a constant expression"); });
      return bound->value;
    } catch (const expr::ArithmeticError& a) {
      fail(e, std::string("fails: ") + a.what(), "an expression that evaluates on this cache shape");
    }
  }

  std::int64_t positive(const SourceExpr& e, const std::string& what) const {
    std::int64_t v = constant(e);
    if (v <= 0) fail(e, "is " + std::to_string(v), what + " (check the layout's \"requires\")");
    return v;
  }

  std::int64_t non_negative(const SourceExpr& e, const std::string& what) const {
    std::int64_t v = constant(e);
    if (v < 0) fail(e, "is " + std::to_string(v), what);
    return v;
  }

  void bind_values() {
    for (const auto& [k, v] : out_.cache.params) out_.values[k] = v;
    for (const auto& [name, v] : overrides_) {
      const std::string& k = name;  // clang 14 cannot capture a structured binding in a lambda
      bool is_param = std::any_of(L_.params.begin(), L_.params.end(), [&](const auto& p) { return p.name == k; });
      bool is_cache = std::find(spec::cache_parameter_names().begin(), spec::cache_parameter_names().end(), k) !=
                      spec::cache_parameter_names().end();
      if (!is_param && !is_cache) {
        std::string names;
        for (const auto& p : L_.params) names += (names.empty() ? "" : ", ") + p.name;
        throw SpecError("", "--param " + k, "a name that is neither a parameter of " + L_.name +
                                                " nor a cache-shape parameter",
                        "one of: " + names + (names.empty() ? "" : ", ") + "num_tokens, num_layers, ...");
      }
      if (is_cache) out_.values[k] = v;
    }
    // A cache-shape parameter the layout reads but the cache does not bind: the layout does not fit (the misfit's
    // path is the first expression reading it).
    for (const auto& [n, path] : cache_names_used()) {
      if (out_.values.count(n)) continue;
      out_.misfits.push_back({"cache shape " + out_.cache.name + " has no parameter " + n + ", which " + L_.name + " reads",
                              path});
    }
    if (!out_.fits()) return;
    for (std::size_t i : spec::parameter_order(L_.params, file())) {
      const auto& p = L_.params[i];
      auto o = overrides_.find(p.name);
      out_.values[p.name] = o != overrides_.end() ? o->second : constant(p.value);
    }
  }

  // Each cache-shape parameter the layout reads, with the JSON path of the first expression reading it
  // ("/content" for a built-in content's extents).
  std::vector<std::pair<std::string, std::string>> cache_names_used() const {
    std::vector<std::pair<std::string, std::string>> used;
    auto add = [&](const SourceExpr& e) {
      for (const auto& n : spec::referenced_names(e.expr)) {
        const auto& known = spec::cache_parameter_names();
        if (std::find(known.begin(), known.end(), n) != known.end() &&
            std::none_of(used.begin(), used.end(), [&](const auto& u) { return u.first == n; }))
          used.emplace_back(n, e.path.empty() || e.path[0] != '/' ? "/content" : e.path);
      }
    };
    for (const auto& c : L_.content.coords) add(c.extent);
    for (const auto& p : L_.params) add(p.value);
    for (const auto& r : L_.requirements) add(r);
    for (const auto& t : L_.tables) { add(t.length); add(t.first); add(t.end); }
    if (L_.holds) add(*L_.holds);
    for (const auto& t : L_.tensors) {
      if (t.per_first) add(*t.per_first);
      if (t.per_end) add(*t.per_end);
      for (const auto& e : t.shape) add(e);
      if (t.size) add(*t.size);
      for (const auto& v : t.views) {
        if (v.holds) add(*v.holds);
        if (v.offset) add(*v.offset);
        for (const auto& e : v.shape) add(e);
        for (const auto& e : v.strides) add(e);
        for (const auto& e : v.index) add(e);
      }
    }
    return used;
  }

  void check_requirements() {
    for (const auto& r : L_.requirements) {
      if (constant(r) != 0) continue;
      std::string values;
      for (const auto& n : spec::referenced_names(r.expr))
        values += (values.empty() ? "" : ", ") + n + " = " + std::to_string(out_.values.at(n));
      out_.misfits.push_back({"requirement `" + r.text + "` is false (" + values + ")", r.path});
    }
  }

  // Every position count (and so every domain cell's volume) fits in int64.
  void check_box_fits() const {
    try {
      box_volume(out_.coord_extents);
    } catch (const expr::ArithmeticError& a) {
      const spec::Coordinate& last = L_.content.coords.back();
      std::string extents;
      for (std::size_t i = 0; i < out_.coord_names.size(); ++i)
        extents += (i ? " x " : "") + out_.coord_names[i] + " " + std::to_string(out_.coord_extents[i]);
      throw SpecError(out_.cache.file.empty() ? file() : out_.cache.file, out_.cache.file.empty() ? last.extent.path : "/params",
                      "a coordinate box of " + extents + " positions on cache shape " + out_.cache.name + ", whose count overflows: " + a.what(),
                      "at most 2^63 - 1 logical positions");
    }
  }

  void check_storage() const {
    try {
      check_storage_fits(out_);
    } catch (const expr::ArithmeticError& a) {
      throw SpecError(file(), "/tensors", "tensors whose storage together overflows on cache shape " + out_.cache.name + ": " + a.what(),
                      "a layout whose whole storage, in bytes, fits in 64 bits");
    }
  }

  void bind_table(const spec::TableDecl& t) {
    BoundTable b{t.name, positive(t.length, "a positive table length"), non_negative(t.first, "a range start >= 0"),
                 constant(t.end)};
    if (b.end <= b.first || b.end - b.first < b.length)  // end > first >= 0: the difference cannot overflow
      throw SpecError(file(), t.path,
                      "a table of " + std::to_string(b.length) + " entries into the range [" +
                          std::to_string(b.first) + ", " + std::to_string(b.end) + ") on cache shape " +
                          out_.cache.name,
                      "a range with at least as many values as entries (tables are injective)");
    // Every engine keeps block tables as int32, and so does the kernel ABI.
    if (b.end > std::numeric_limits<std::int32_t>::max())
      throw SpecError(file(), t.path,
                      "a table whose range ends at " + std::to_string(b.end) + " on cache shape " + out_.cache.name,
                      "entries that fit in int32 (block tables are int32 in every engine and in emitted kernels)");
    out_.tables.push_back(b);
  }

  expr::Expr over_coordinates(const SourceExpr& e) const {
    try {
      return expr::substitute(
          e.expr,
          [&](const std::string& n) {
            for (std::size_t i = 0; i < out_.coord_names.size(); ++i)
              if (out_.coord_names[i] == n) return expr::coord(static_cast<int>(i), n);
            return expr::literal(out_.values.at(n));
          },
          [&](const std::string& n) {
            for (std::size_t i = 0; i < out_.tables.size(); ++i)
              if (out_.tables[i].name == n) return static_cast<int>(i);
            throw std::logic_error("unknown table " + n);
          });
    } catch (const expr::ArithmeticError& a) {
      fail(e, std::string("fails: ") + a.what(), "an expression that evaluates on this cache shape");
    }
  }

  BoundView bind_view(const spec::ViewDecl& v) const {
    BoundView b;
    b.name = v.name;
    b.path = v.path;
    expr::Expr holds = expr::literal(1);
    if (L_.holds) holds = over_coordinates(*L_.holds);
    if (v.holds) holds = expr::fold(expr::make(expr::Op::And, {holds, over_coordinates(*v.holds)}));
    b.holds = holds;
    b.layout_holds = L_.holds ? over_coordinates(*L_.holds) : expr::literal(1);
    b.offset = v.offset ? non_negative(*v.offset, "a view offset >= 0") : 0;
    for (const auto& e : v.shape) b.extents.push_back(positive(e, "a positive extent"));
    for (const auto& e : v.index) {
      b.index.push_back(over_coordinates(e));
      b.index_paths.push_back(e.path);
      b.index_texts.push_back(e.text);
    }
    const std::size_t rank = b.extents.size();
    b.strides.assign(rank, 0);
    try {
      if (!v.strides.empty()) {
        for (std::size_t k = 0; k < rank; ++k) b.strides[k] = non_negative(v.strides[k], "a stride >= 0");
      } else {
        // vLLM's get_kv_cache_stride_order: physical axis j is logical axis order[j]; the last is contiguous.
        std::vector<int> order = v.stride_order;
        if (order.empty())
          for (std::size_t k = 0; k < rank; ++k) order.push_back(static_cast<int>(k));
        std::int64_t stride = 1;
        for (std::size_t j = rank; j-- > 0;) {
          b.strides[static_cast<std::size_t>(order[j])] = stride;
          stride = expr::checked_mul(stride, b.extents[static_cast<std::size_t>(order[j])]);
        }
      }
    } catch (const expr::ArithmeticError& a) {
      throw SpecError(file(), v.path + "/shape", std::string("a shape whose strides overflow: ") + a.what(),
                      "a view that fits in 64-bit element offsets");
    }
    return b;
  }

  // Every element and byte offset of the view fits in int64 (the view algebra's functions rely on it).
  void check_view(const spec::ViewDecl& decl, const BoundView& v) const {
    try {
      check_view_fits(v, out_.element_bytes());
    } catch (const expr::ArithmeticError& a) {
      std::string terms = std::to_string(v.offset);
      for (std::size_t k = 0; k < v.extents.size(); ++k)
        terms += " + " + std::to_string(v.extents[k] - 1) + " * " + std::to_string(v.strides[k]);
      throw SpecError(file(), decl.path + (decl.strides.empty() ? "/shape" : "/strides"),
                      "a view whose last element offset (" + terms + ") or its byte offset (x " +
                          std::to_string(out_.element_bytes()) + " bytes) overflows on cache shape " + out_.cache.name + ": " + a.what(),
                      "a view whose element and byte offsets fit in 64 bits");
    }
  }

  // "per_range": [FIRST, END) must be a non-empty range of the per coordinate's values.
  // @post 0 <= b.per_first < b.per_first + b.instances <= the coordinate's extent.
  void bind_per_range(const spec::TensorDecl& t, BoundTensor& b) const {
    const std::int64_t extent = out_.coord_extents[static_cast<std::size_t>(b.per)];
    const std::int64_t first = constant(*t.per_first), end = constant(*t.per_end);
    if (first < 0 || end <= first || end > extent)  // 0 <= first < end: end - first cannot overflow
      throw SpecError(file(), t.path + "/per_range",
                      "the range [" + std::to_string(first) + ", " + std::to_string(end) + ") of " + t.per +
                          " (`" + t.per_first->text + "`, `" + t.per_end->text + "`) on cache shape " + out_.cache.name,
                      "a non-empty range within " + t.per + "'s values [0, " + std::to_string(extent) + ")");
    b.per_first = first;
    b.instances = end - first;
  }

  void bind_tensor(const spec::TensorDecl& t) {
    BoundTensor b;
    b.name = t.name;
    b.path = t.path;
    if (!t.per.empty()) {
      b.per = out_.coord_index(t.per);
      b.instances = out_.coord_extents[static_cast<std::size_t>(b.per)];
      if (t.per_first && t.per_end) bind_per_range(t, b);
    }
    for (const auto& v : t.views) {
      b.views.push_back(bind_view(v));
      check_view(v, b.views.back());
    }
    try {
      if (t.size) {
        b.size = positive(*t.size, "a positive allocation size");
      } else if (!t.shape.empty()) {
        b.size = 1;
        for (const auto& e : t.shape) b.size = expr::checked_mul(b.size, positive(e, "a positive extent"));
      } else {
        b.size = cosize(b.views.front());
      }
      check_tensor_fits(b, out_.element_bytes());
    } catch (const expr::ArithmeticError& a) {
      throw SpecError(file(), t.path, "an allocation (" + std::to_string(b.instances) + " instance(s)) whose size overflows on cache shape " +
                                          out_.cache.name + ": " + a.what(),
                      "a tensor whose elements and bytes, over all instances, fit in 64 bits");
    }
    out_.tensors.push_back(std::move(b));
  }

  const spec::Layout& L_;
  const Overrides& overrides_;
  BoundLayout out_;
};

}  // namespace

int BoundLayout::coord_index(const std::string& name) const {
  for (std::size_t i = 0; i < coord_names.size(); ++i)
    if (coord_names[i] == name) return static_cast<int>(i);
  return -1;
}

std::int64_t BoundLayout::element_bytes() const { return spec::dtype_bytes(layout->dtype); }

BoundLayout bind(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& cache,
                 const Overrides& overrides) {
  return Binder(std::move(layout), cache, overrides).run();
}

}  // namespace kvlayout::layout

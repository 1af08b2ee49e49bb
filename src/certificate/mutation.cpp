#include "certificate/mutation.hpp"

#include <functional>

#include "expr/parse.hpp"
#include "expr/print.hpp"

namespace kvlayout::certificate {

using expr::Op;

namespace {

spec::SourceExpr rewrite(const spec::SourceExpr& old, const std::string& text) {
  return spec::SourceExpr{expr::parse(text), old.path, text};
}

spec::SourceExpr rewrite(const spec::SourceExpr& old, const expr::Expr& e) {
  return spec::SourceExpr{e, old.path, expr::to_string(e)};
}

// The tree with its first (pre-order) node of kind `op` replaced by that node's left operand; null if none.
expr::Expr drop_first(const expr::Expr& e, Op op, bool& done) {
  if (done) return e;
  if (e->op == op) {
    done = true;
    return e->args[0];
  }
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(drop_first(a, op, done));
  return std::make_shared<const expr::Node>(expr::Node{e->op, e->value, e->name, std::move(args)});
}

// The tree with the literal operand of its first comparison moved by +1; null if none.
expr::Expr bump_bound(const expr::Expr& e, bool& done) {
  if (done) return e;
  switch (e->op) {
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      for (std::size_t i = 0; i < 2; ++i)
        if (e->args[i]->op == Op::Literal) {
          done = true;
          std::vector<expr::Expr> args = e->args;
          args[i] = expr::literal(e->args[i]->value + 1);
          return std::make_shared<const expr::Node>(expr::Node{e->op, 0, {}, std::move(args)});
        }
      break;
    default:
      break;
  }
  std::vector<expr::Expr> args;
  for (const auto& a : e->args) args.push_back(bump_bound(a, done));
  return std::make_shared<const expr::Node>(expr::Node{e->op, e->value, e->name, std::move(args)});
}

class Generator {
 public:
  explicit Generator(const spec::Layout& original) : original_(original) {}

  std::vector<Mutant> run() {
    for (std::size_t t = 0; t < original_.tensors.size(); ++t)
      for (std::size_t v = 0; v < original_.tensors[t].views.size(); ++v) view_edits(t, v);
    domain_edits();
    dtype_edit();
    return std::move(out_);
  }

 private:
  void emit(const std::string& kind, const std::string& what, const std::function<void(spec::Layout&)>& edit) {
    auto copy = std::make_shared<spec::Layout>(original_);
    edit(*copy);
    copy->name = original_.name + "~" + kind + "~" + std::to_string(out_.size());
    out_.push_back({kind, what, copy});
  }

  void view_edits(std::size_t t, std::size_t v) {
    const spec::ViewDecl& view = original_.tensors[t].views[v];
    const std::string where = original_.tensors[t].name + (view.name != original_.tensors[t].name ? "." + view.name : "");
    const std::size_t rank = view.index.size();
    auto at = [t, v](spec::Layout& l) -> spec::ViewDecl& { return l.tensors[t].views[v]; };
    for (std::size_t k = 0; k + 1 < rank; ++k)
      emit("swap-index", "swap index " + std::to_string(k) + " `" + view.index[k].text + "` and " + std::to_string(k + 1) +
                             " `" + view.index[k + 1].text + "` of " + where,
           [&](spec::Layout& l) { std::swap(at(l).index[k], at(l).index[k + 1]); });
    for (std::size_t k = 0; k < rank; ++k) {
      for (int delta : {+1, -1}) {
        std::string text = "(" + view.shape[k].text + ") " + (delta > 0 ? "+ 1" : "- 1");
        emit(delta > 0 ? "extent+1" : "extent-1", "extent " + std::to_string(k) + " of " + where + " `" + text + "`",
             [&](spec::Layout& l) { at(l).shape[k] = rewrite(view.shape[k], text); });
      }
    }
    if (!view.stride_order.empty()) {
      emit("stride", "swap the last two entries of " + where + "'s stride order", [&](spec::Layout& l) {
        auto& o = at(l).stride_order;
        std::swap(o[o.size() - 1], o[o.size() - 2]);
      });
    } else if (!view.strides.empty()) {
      for (std::size_t k = 0; k < rank; ++k) {
        std::string text = "(" + view.strides[k].text + ") + 1";
        emit("stride", "stride " + std::to_string(k) + " of " + where + " `" + text + "`",
             [&](spec::Layout& l) { at(l).strides[k] = rewrite(view.strides[k], text); });
      }
    } else if (rank >= 2) {
      emit("stride", "give " + where + " a stride order swapping its last two axes", [&](spec::Layout& l) {
        auto& o = at(l).stride_order;
        for (std::size_t k = 0; k < rank; ++k) o.push_back(static_cast<int>(k));
        std::swap(o[rank - 1], o[rank - 2]);
      });
    }
    for (std::size_t k = 0; k < rank; ++k) {
      for (Op op : {Op::Mod, Op::Div}) {
        bool done = false;
        expr::Expr dropped = drop_first(view.index[k].expr, op, done);
        if (!done) continue;
        emit(op == Op::Mod ? "drop-mod" : "drop-div",
             "index " + std::to_string(k) + " of " + where + " `" + view.index[k].text + "` -> `" + expr::to_string(dropped) + "`",
             [&](spec::Layout& l) { at(l).index[k] = rewrite(view.index[k], dropped); });
      }
      std::string shifted = "(" + view.index[k].text + ") + 1";
      emit("shift-index", "index " + std::to_string(k) + " of " + where + " `" + shifted + "`",
           [&](spec::Layout& l) { at(l).index[k] = rewrite(view.index[k], shifted); });
    }
  }

  void domain_edits() {
    if (original_.holds) {
      bool done = false;
      expr::Expr bumped = bump_bound(original_.holds->expr, done);
      if (done)
        emit("domain-bound", "layout domain `" + original_.holds->text + "` -> `" + expr::to_string(bumped) + "`",
             [&](spec::Layout& l) { l.holds = rewrite(*original_.holds, bumped); });
    }
    for (std::size_t t = 0; t < original_.tensors.size(); ++t)
      for (std::size_t v = 0; v < original_.tensors[t].views.size(); ++v) {
        const auto& holds = original_.tensors[t].views[v].holds;
        if (!holds) continue;
        bool done = false;
        expr::Expr bumped = bump_bound(holds->expr, done);
        if (!done) continue;
        emit("domain-bound", "domain of " + original_.tensors[t].views[v].name + " `" + holds->text + "` -> `" +
                                 expr::to_string(bumped) + "`",
             [&](spec::Layout& l) { l.tensors[t].views[v].holds = rewrite(*holds, bumped); });
      }
  }

  void dtype_edit() {
    using spec::DType;
    DType to;
    switch (original_.dtype) {
      case DType::bf16: to = DType::fp16; break;
      case DType::fp16: to = DType::bf16; break;
      case DType::fp32: to = DType::bf16; break;
      case DType::fp8_e4m3: to = DType::fp8_e5m2; break;
      case DType::fp8_e5m2: to = DType::fp8_e4m3; break;
      case DType::int8: to = DType::uint8; break;
      default: to = DType::int8; break;
    }
    emit("dtype", "element type " + spec::dtype_name(original_.dtype) + " -> " + spec::dtype_name(to),
         [&](spec::Layout& l) { l.dtype = to; });
  }

  const spec::Layout& original_;
  std::vector<Mutant> out_;
};

}  // namespace

const std::vector<std::string>& mutation_kinds() {
  static const std::vector<std::string> kinds = {"swap-index", "extent+1",    "extent-1",     "stride", "drop-mod",
                                                 "drop-div",   "shift-index", "domain-bound", "dtype"};
  return kinds;
}

std::vector<Mutant> mutants(const spec::Layout& original) { return Generator(original).run(); }

}  // namespace kvlayout::certificate

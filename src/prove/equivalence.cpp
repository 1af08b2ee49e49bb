#include "prove/equivalence.hpp"

#include "expr/print.hpp"
#include "layout/domain_cells.hpp"
#include "layout/address.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/session.hpp"

namespace kvlayout::prove {
namespace {

// A structural difference that settles the question without a solver, or empty.
std::string structural_difference(const layout::BoundLayout& a, const layout::BoundLayout& b) {
  const spec::Layout& la = *a.layout;
  const spec::Layout& lb = *b.layout;
  if (la.content.name != lb.content.name || a.coord_names != b.coord_names || a.coord_extents != b.coord_extents)
    return "different content or coordinate extents";
  if (std::string d = value_difference(la, lb); !d.empty()) return d;
  if (a.tables.size() != b.tables.size()) return "different numbers of tables";
  for (std::size_t i = 0; i < a.tables.size(); ++i)
    if (a.tables[i].length != b.tables[i].length || a.tables[i].first != b.tables[i].first || a.tables[i].end != b.tables[i].end)
      return "table " + a.tables[i].name + " and table " + b.tables[i].name + " differ in length or range";
  if (a.tensors.size() != b.tensors.size()) return "different numbers of tensors";
  for (std::size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].instances != b.tensors[i].instances || a.tensors[i].size != b.tensors[i].size ||
        a.tensors[i].per != b.tensors[i].per || a.tensors[i].per_first != b.tensors[i].per_first)
      return "tensor " + a.tensors[i].name + " and tensor " + b.tensors[i].name + " differ in instances, their range or size";
  return "";
}

bool identical(const layout::BoundView& x, const layout::BoundView& y) {
  if (x.extents != y.extents || x.strides != y.strides || x.offset != y.offset || x.index.size() != y.index.size()) return false;
  if (expr::to_string(x.holds) != expr::to_string(y.holds)) return false;
  for (std::size_t k = 0; k < x.index.size(); ++k)
    if (expr::to_string(x.index[k]) != expr::to_string(y.index[k])) return false;
  return true;
}

}  // namespace

std::string value_difference(const spec::Layout& a, const spec::Layout& b) {
  if (a.dtype != b.dtype) return "element types " + spec::dtype_name(a.dtype) + " and " + spec::dtype_name(b.dtype);
  bool same_scale = (!a.scale && !b.scale) ||
                    (a.scale && b.scale && a.scale->dtype == b.scale->dtype && a.scale->per == b.scale->per);
  if (!same_scale) return "different quantisation scales";
  return "";
}

Equivalence same_address_function(const layout::BoundLayout& a, const layout::BoundLayout& b, const ProveOptions& options) {
  Equivalence out;
  if (std::string d = structural_difference(a, b); !d.empty()) {
    out.status = Status::Refuted;
    out.detail = d;
    return out;
  }
  // Same domain: the positions either holds.
  if (auto set = layout::describe_positions(a, {layout::held_predicate(a), layout::held_predicate(b)},
                                    [](const std::vector<bool>& t) { return t[0] != t[1]; })) {
    if (set->count > 0) {
      out.status = Status::Refuted;
      out.detail = std::to_string(set->count) + " positions held by only one of them";
      return out;
    }
  }
  Session session(options, a.layout->name + " == " + b.layout->name + " on " + a.cache.name,
                  a.layout->name + "__same__" + b.layout->name + "__" + a.cache.name);
  bool unknown = false;
  std::string why;  // the reason of the first unknown answer
  int by_solver = 0;
  for (std::size_t ta = 0; ta < a.tensors.size(); ++ta) {
    for (std::size_t va = 0; va < a.tensors[ta].views.size(); ++va) {
      for (std::size_t tb = 0; tb < b.tensors.size(); ++tb) {
        for (std::size_t vb = 0; vb < b.tensors[tb].views.size(); ++vb) {
          if (ta == tb && va == vb && identical(a.tensors[ta].views[va], b.tensors[tb].views[vb]) && options.normalise)
            continue;
          ++by_solver;
          Encoder ea(session.ctx(), a, "A");
          Encoder eb(session.ctx(), b, "B", &ea);
          SymbolicPosition x = ea.position("x");
          z3::expr differ = session.ctx().bool_val(ta != tb);
          if (ta == tb)
            differ = ea.instance(ta, x) != eb.instance(tb, x) || ea.offset(ta, va, x) != eb.offset(tb, vb, x);
          Query q(session, "same address " + a.tensors[ta].views[va].name + "/" + b.tensors[tb].views[vb].name);
          q.add(ea.in_box(x) && ea.view_domain(ta, va, x) && eb.view_domain(tb, vb, x) && differ && ea.table_axioms() &&
                eb.table_axioms());
          Answer ans = q.check();
          if (ans == Answer::Unknown && !unknown) {
            unknown = true;
            why = q.unknown_reason();
          }
          if (ans != Answer::Sat) continue;
          z3::model m = minimise(q, x.coords);
          out.status = Status::Refuted;
          out.witness = model_coords(m, x);
          // Re-evaluate: under one concrete table (the model's), the two must place the witness apart.
          std::vector<Encoder::LookupTerm> lookups = ea.lookups();
          lookups.insert(lookups.end(), eb.lookups().begin(), eb.lookups().end());
          layout::BlockTables tables = tables_from_model(a, lookups, m);
          layout::Location la = layout::locate(a, *out.witness, tables), lb = layout::locate(b, *out.witness, tables);
          if (la.address.tensor == lb.address.tensor && la.address.instance == lb.address.instance &&
              la.address.offset == lb.address.offset && la.placement == lb.placement)
            throw InternalError("equivalence witness " + layout::format_coordinate(a, *out.witness) + " does not reproduce");
          out.detail = "they place " + layout::format_coordinate(a, *out.witness) + " differently";
          return out;
        }
      }
    }
  }
  out.status = unknown ? Status::Unknown : Status::Proved;
  out.detail = unknown ? "the solver gave no answer (" + why + ")"
                       : "the same address function (" + std::to_string(by_solver) + " view pair(s) by the solver)";
  return out;
}

}  // namespace kvlayout::prove

#include "layout/address.hpp"

#include "layout/view_algebra.hpp"
#include "expr/evaluate.hpp"
#include "spec/error.hpp"

namespace kvlayout::layout {
namespace {

// Thrown through the evaluator when an index reads a table entry that does not exist.
struct TableMiss {
  std::string what;
};

}  // namespace

std::string format_coordinate(const BoundLayout& bound, std::span<const std::int64_t> coord) {
  std::string s = "(";
  for (std::size_t i = 0; i < coord.size(); ++i) {
    if (i) s += ", ";
    const std::string& n = bound.coord_names[i];
    if (n == "kv" && bound.layout->content.name == "kv-heads")
      s += coord[i] == 0 ? "K" : coord[i] == 1 ? "V" : "kv " + std::to_string(coord[i]);
    else
      s += n + " " + std::to_string(coord[i]);
  }
  return s + ")";
}

std::int64_t byte_offset(const BoundLayout& bound, const Address& a) {
  return layout::byte_offset(a.offset, bound.element_bytes());
}

Location locate(const BoundLayout& bound, std::span<const std::int64_t> coord, const BlockTables& tables) {
  if (coord.size() != bound.coord_extents.size())
    throw spec::SpecError("", "", std::to_string(coord.size()) + " coordinate values",
                          std::to_string(bound.coord_extents.size()) + " (one per coordinate)");
  for (std::size_t i = 0; i < coord.size(); ++i)
    if (coord[i] < 0 || coord[i] >= bound.coord_extents[i])
      throw spec::SpecError("", "", bound.coord_names[i] + "=" + std::to_string(coord[i]),
                            "0 <= " + bound.coord_names[i] + " < " + std::to_string(bound.coord_extents[i]) +
                                " on cache shape " + bound.cache.name);
  std::vector<TableRead> reads;
  // The lookup captures one pointer, which std::function holds without allocating: locate is the byte
  // oracle's inner loop (enumerate/address_map.cpp), called once per position of every cross-check.
  struct Context {
    const BoundLayout& bound;
    const BlockTables& tables;
    std::vector<TableRead>& reads;
  } context{bound, tables, reads};
  expr::Environment env{coord, [c = &context](int table, std::int64_t entry) -> std::int64_t {
                          const BoundTable& t = c->bound.tables[static_cast<std::size_t>(table)];
                          if (entry < 0 || entry >= t.length)
                            throw TableMiss{t.name + "[" + std::to_string(entry) + "] is outside the table's " +
                                            std::to_string(t.length) + " entries"};
                          std::int64_t value = c->tables.entry(static_cast<std::size_t>(table), entry);
                          c->reads.push_back({table, entry, value});
                          return value;
                        }};
  const std::string& file = bound.layout->file;
  for (std::size_t ti = 0; ti < bound.tensors.size(); ++ti) {
    const BoundTensor& tensor = bound.tensors[ti];
    for (std::size_t vi = 0; vi < tensor.views.size(); ++vi) {
      const BoundView& view = tensor.views[vi];
      Location loc;
      loc.address.tensor = static_cast<int>(ti);
      loc.address.view = static_cast<int>(vi);
      loc.address.instance = tensor.per >= 0 ? coord[static_cast<std::size_t>(tensor.per)] - tensor.per_first : 0;
      try {
        if (expr::evaluate(view.holds, env) == 0) continue;
      } catch (const expr::ArithmeticError& a) {
        // holds is the layout's domain && the view's, short-circuited: the layout's fails first if at all.
        bool layout_part = false;
        try {
          expr::evaluate(view.layout_holds, env);
        } catch (const expr::ArithmeticError&) {
          layout_part = true;
        }
        throw spec::SpecError(file, layout_part ? "/holds" : view.path + "/holds", std::string("a domain that fails at ") +
                                                              format_coordinate(bound, coord) + ": " + a.what(),
                              "a domain that evaluates everywhere");
      }
      loc.placement = Placement::Held;
      // A held position whose coordinate has no instance (outside the tensor's per_range): no storage at all.
      if (loc.address.instance < 0 || loc.address.instance >= tensor.instances) {
        const std::string& per = bound.coord_names[static_cast<std::size_t>(tensor.per)];
        loc.placement = Placement::OutOfBounds;
        loc.violation = "instance " + per + " - " + std::to_string(tensor.per_first) + " = " +
                        std::to_string(loc.address.instance) + " is outside the " + std::to_string(tensor.instances) +
                        " instance(s) of " + tensor.name + " (" + per + " in [" + std::to_string(tensor.per_first) + ", " +
                        std::to_string(tensor.per_first + tensor.instances) + "))";
      }  // the indices are still evaluated: one that fails here fails as it would at any held position
      loc.address.index.reserve(view.index.size());
      for (std::size_t k = 0; k < view.index.size(); ++k) {
        std::int64_t i = 0;
        try {
          i = expr::evaluate(view.index[k], env);
        } catch (const TableMiss& miss) {
          loc.placement = Placement::OutOfBounds;
          loc.violation = "axis " + std::to_string(k) + " `" + view.index_texts[k] + "`: " + miss.what;
          loc.reads = std::move(reads);
          return loc;
        } catch (const expr::ArithmeticError& a) {
          throw spec::SpecError(file, view.index_paths[k],
                                "`" + view.index_texts[k] + "`, which fails at " + format_coordinate(bound, coord) +
                                    ": " + a.what(),
                                "an index expression that evaluates everywhere");
        }
        loc.address.index.push_back(i);
        if ((i < 0 || i >= view.extents[k]) && loc.placement == Placement::Held) {
          loc.placement = Placement::OutOfBounds;
          loc.violation = "axis " + std::to_string(k) + " `" + view.index_texts[k] + "` = " + std::to_string(i) +
                          " is outside [0, " + std::to_string(view.extents[k]) + ")";
        }
      }
      loc.reads = std::move(reads);  // every path from here returns
      if (loc.placement != Placement::Held) return loc;  // an index outside its axis: no meaningful offset
      const std::int64_t offset = *element_offset(view, loc.address.index);
      loc.address.offset = offset;
      if (offset < 0 || offset >= tensor.size) {
        loc.placement = Placement::OutOfBounds;
        loc.violation = "element offset " + std::to_string(offset) + " is outside the tensor's " +
                        std::to_string(tensor.size) + " elements";
      }
      return loc;
    }
  }
  return Location{};
}

}  // namespace kvlayout::layout

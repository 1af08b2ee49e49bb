#pragma once
// A layout as declared in specs/*.json: everything the engine's code says, before any cache shape binds it.
// See specs/README.md for the language; binding to a cache shape is in src/layout/.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spec/content.hpp"
#include "spec/dtype.hpp"
#include "spec/source_expr.hpp"

namespace kvlayout::spec {

struct Citation {
  std::string repo, path, symbol, commit, version, note;
};

// Evidence that an engine's own code produced this layout: conformance/ ran the pinned package's
// allocation (and, where it has one on CPU, its write path) and the declaration agreed with it. A layout
// without it is "declared": read from source, cited, never run.
struct Observation {
  std::string package;              // "vllm==0.33.0": the pinned distribution the conformance suite installs
  std::string test;                 // "conformance/test_vllm.py": the test that runs the engine's code
  std::vector<std::string> checks;  // what agreed: "geometry" (kvlayout check --tensors), "bytes" (read-back)
};

struct Parameter {
  std::string name;
  SourceExpr value;  // over cache-shape parameters and other layout parameters
};

// A named indirection (block table, page table, cell map). In a proof it is any injective map from
// [0, length) into [first, end); concretely it is a list of `length` distinct entries in that range.
struct TableDecl {
  std::string name;
  std::string path;
  SourceExpr length;
  SourceExpr first;
  SourceExpr end;
};

// One way of addressing a tensor's storage: a shape, one index expression per axis, and the strides
// (row-major by default, permuted by stride_order, or explicit) at an element offset into the storage.
struct ViewDecl {
  std::string name;
  std::string path;
  std::optional<SourceExpr> holds;   // which positions this view stores; absent = all the layout holds
  std::optional<SourceExpr> offset;  // element offset of the view in its tensor; absent = 0
  std::vector<SourceExpr> shape;
  std::vector<SourceExpr> index;
  std::vector<int> stride_order;     // empty = identity; physical order = shape permuted by it
  std::vector<SourceExpr> strides;   // empty = derived from shape and stride_order
};

// A tensor (one allocation per instance). Instances: one per value of the coordinate `per`, or one.
// With `per_range` [FIRST, END) only the values in that range have an instance (a pipeline-parallel
// stage's layers): END - FIRST instances, a position's instance being coord(per) - FIRST.
struct TensorDecl {
  std::string name;
  std::string path;
  std::string per;                   // a coordinate name, or empty
  std::optional<SourceExpr> per_first, per_end;  // "per_range": [FIRST, END] over sizes; only with `per`
  std::vector<SourceExpr> shape;     // allocation shape of a tensor with several views; may be empty
  std::optional<SourceExpr> size;    // explicit allocation size in elements
  std::vector<ViewDecl> views;       // at least one
};

// A quantisation scale kept beside the cache: one scale per value of the coordinates in `per`.
struct ScaleDecl {
  std::string path;
  DType dtype = DType::fp32;
  std::vector<std::string> per;
  std::string note;
};

// A rank axis of a family: the parameter `rank` takes every value in [0, size), `size` being another
// parameter (e.g. tp_rank over tp_size). Each value is one instance of the family.
struct RankAxis {
  std::string rank;
  std::string size;
  std::string path;  // JSON pointer of the member
};

struct Layout {
  std::string name;
  std::string file;
  std::string engine;
  std::string description;
  bool control = false;
  std::optional<Citation> cite;
  std::optional<Observation> observed;
  Content content;
  DType dtype = DType::bf16;
  std::optional<ScaleDecl> scale;
  std::vector<Parameter> params;
  std::vector<SourceExpr> requirements;
  std::vector<TableDecl> tables;
  std::optional<SourceExpr> holds;   // the layout's domain, ANDed with each view's
  std::vector<TensorDecl> tensors;
  // Non-empty: a rank family (one instance per combination of rank values, in this order, the last
  // varying fastest); see layout/rank_group.hpp. Each instance is this declaration with the rank
  // parameters bound, its ownership rule what `holds` says.
  std::vector<RankAxis> ranks;
  // A thin declaration (`"instance_of"`): the family it binds, whose file lies beside this one.
  std::string instance_of;
};

bool is_family(const Layout& layout);

// What a layout's claim rests on: "observed" (the engine's own code ran in conformance/ and agreed),
// "declared" (a cited source only) or "control" (made up, never an engine's). The loader refuses an
// observation on a control, so exactly one applies.
inline const char* evidence_kind(const Layout& layout) {
  return layout.control ? "control" : layout.observed ? "observed" : "declared";
}

// The declaration with each named parameter's default replaced by an integer literal, renamed `name`.
// Rank axes whose rank parameter is bound are dropped (a family with every rank bound is one instance).
// @pre every name in `values` is a parameter of `layout`; throws SpecError naming the first that is not.
std::shared_ptr<const Layout> with_params(const Layout& layout, const std::map<std::string, std::int64_t>& values,
                                          const std::string& name);

// Parses, validates names and types, and checks the parameter definitions are acyclic.
// @post the result refers only to names it declares or to cache_parameter_names(); throws SpecError.
std::shared_ptr<const Layout> load_layout(const std::string& file);

// "repo@commit:path::symbol" (or @version) for display.
std::string format_citation(const Citation& c);

}  // namespace kvlayout::spec

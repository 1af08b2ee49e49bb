#include <algorithm>
#include <filesystem>
#include <map>

#include "spec/cache_shape.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"
#include "spec/name_check.hpp"
#include "spec/parameter_order.hpp"

namespace kvlayout::spec {
namespace {

using expr::Type;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A member name that expressions (and --param, --table, COORD=VALUE) refer to must be one they can write.
void check_identifier(const JsonNode& member, const std::string& name, const std::string& what) {
  if (!is_identifier(name))
    member.fail(what + " named \"" + name + "\"",
                "a name of letters, digits and _ that does not start with a digit (as expressions write it)");
}

Citation load_citation(const JsonNode& node) {
  node.allow_only({"repo", "path", "symbol", "commit", "version", "note"});
  Citation c;
  c.repo = node.at("repo", "the engine's repository, e.g. \"vllm-project/vllm\"").name("a non-empty string");
  c.path = node.at("path", "the source file the layout was read from").name("a non-empty string");
  c.symbol = node.at("symbol", "the function or class that defines the layout").name("a non-empty string");
  if (auto k = node.find("commit")) c.commit = k->name("a commit hash, a non-empty string");
  if (auto v = node.find("version")) c.version = v->name("a version, a non-empty string");
  if (auto n = node.find("note")) c.note = n->string("a string");
  if (c.commit.empty() && c.version.empty())
    node.fail("neither \"commit\" nor \"version\"", "the commit or version the layout was read at");
  return c;
}

// {"package": "NAME==VERSION", "test": "conformance/....py", "checks": ["geometry", "bytes"]}; the citation
// must pin the same release ("version": "NAME==VERSION"), since what ran is what was read.
Observation load_observation(const JsonNode& node, const std::optional<Citation>& cite) {
  node.allow_only({"package", "test", "checks"});
  Observation o;
  JsonNode package = node.at("package", "the pinned package the engine code ran from, e.g. \"vllm==0.33.0\"");
  o.package = package.name("NAME==VERSION");
  const std::size_t pin = o.package.find("==");
  if (pin == std::string::npos || pin == 0 || pin + 2 >= o.package.size())
    package.fail("\"" + o.package + "\"", "a pinned package, NAME==VERSION");
  JsonNode test = node.at("test", "the conformance test that ran it, e.g. \"conformance/test_vllm.py\"");
  o.test = test.name("a path under conformance/ ending in .py");
  if (o.test.rfind("conformance/", 0) != 0 || o.test.size() < 3 || o.test.substr(o.test.size() - 3) != ".py")
    test.fail("\"" + o.test + "\"", "a path under conformance/ ending in .py");
  JsonNode checks = node.at("checks", "what agreed: [\"geometry\"] or [\"geometry\", \"bytes\"]");
  for (const JsonNode& c : checks.items("an array of \"geometry\" and \"bytes\"")) {
    std::string what = c.name("\"geometry\" or \"bytes\"");
    if (what != "geometry" && what != "bytes") c.fail("\"" + what + "\"", "\"geometry\" or \"bytes\"");
    if (contains(o.checks, what)) c.fail("\"" + what + "\" twice", "each check once");
    o.checks.push_back(what);
  }
  if (o.checks.empty() || o.checks.front() != "geometry")
    checks.fail(o.checks.empty() ? "no checks" : "\"" + o.checks.front() + "\" first", "\"geometry\" first (every observation checks it)");
  if (!cite || cite->version != o.package)
    node.fail("an observation of " + o.package + " under a citation " +
                  (cite ? (cite->version.empty() ? "pinned by commit" : "of " + cite->version) : "that is missing"),
              "\"cite\": {\"version\": \"" + o.package + "\"} (what ran is what was read)");
  return o;
}

Content load_content(const JsonNode& root) {
  std::string name = root.at("content", "the content held: \"kv-heads\", \"mla-latent\" or a custom name")
                         .name("a content name, a non-empty string");
  auto coords = root.find("coords");
  if (auto builtin = builtin_content(name)) {
    if (coords) coords->fail("coordinates for the built-in content \"" + name + "\"",
                             "no \"coords\" (built-in contents define their own)");
    return *builtin;
  }
  if (!coords) {
    std::string list;
    for (const auto& n : builtin_content_names()) list += (list.empty() ? "" : ", ") + n;
    root.at("content", "").fail("the custom content \"" + name + "\" without \"coords\"",
                                "a built-in content (" + list + ") or \"coords\": {name: extent, ...}");
  }
  Content c{name, {}, false};
  for (auto& [coord_name, node] : coords->members()) {
    check_identifier(node, coord_name, "a coordinate");
    c.coords.push_back(Coordinate{coord_name, node.expression("the coordinate's extent")});
  }
  if (c.coords.empty()) coords->fail("no coordinates", "at least one coordinate");
  return c;
}

std::vector<SourceExpr> load_expressions(const JsonNode& node, const std::string& what) {
  std::vector<SourceExpr> out;
  for (const JsonNode& item : node.items("an array of " + what)) out.push_back(item.expression(what));
  return out;
}

ViewDecl load_view(const JsonNode& node, const std::string& default_name) {
  ViewDecl v;
  v.path = node.path();
  v.name = default_name;
  if (auto n = node.find("name")) v.name = n->name("the view's name, a non-empty string");
  if (auto h = node.find("holds")) v.holds = h->expression("a truth-valued expression over coordinates");
  if (auto o = node.find("offset")) v.offset = o->expression("an element offset expression");
  v.shape = load_expressions(node.at("shape", "the extent of each axis"), "extent expressions");
  JsonNode index = node.at("index", "one index expression per axis of \"shape\"");
  v.index = load_expressions(index, "index expressions");
  if (v.index.size() != v.shape.size())
    index.fail(std::to_string(v.index.size()) + " index expressions",
               std::to_string(v.shape.size()) + ", one per axis of \"shape\"");
  auto order = node.find("stride_order");
  auto strides = node.find("strides");
  if (order && strides)
    strides->fail("both \"stride_order\" and \"strides\"", "one of them (strides already fix the order)");
  if (order) {
    std::vector<bool> seen(v.shape.size(), false);
    for (const JsonNode& item : order->items("an array of axis numbers")) {
      std::int64_t a = item.integer("an axis number");
      if (a < 0 || a >= static_cast<std::int64_t>(v.shape.size()) || seen[static_cast<std::size_t>(a)])
        item.fail("the axis " + std::to_string(a),
                  "each axis 0.." + std::to_string(v.shape.size() - 1) + " exactly once (a permutation)");
      seen[static_cast<std::size_t>(a)] = true;
      v.stride_order.push_back(static_cast<int>(a));
    }
    if (v.stride_order.size() != v.shape.size())
      order->fail(std::to_string(v.stride_order.size()) + " axes",
                  std::to_string(v.shape.size()) + ", a permutation of the shape's axes");
  }
  if (strides) {
    v.strides = load_expressions(*strides, "stride expressions");
    if (v.strides.size() != v.shape.size())
      strides->fail(std::to_string(v.strides.size()) + " strides",
                    std::to_string(v.shape.size()) + ", one per axis of \"shape\"");
  }
  return v;
}

TensorDecl load_tensor(const JsonNode& node) {
  TensorDecl t;
  t.path = node.path();
  t.name = node.at("name", "the tensor's name").name("a non-empty string");
  // Absent means one instance; an empty string is not a way of saying so.
  if (auto p = node.find("per")) t.per = p->name("the coordinate with one tensor per value, e.g. \"layer\"");
  // "per_range": [FIRST, END]: instances only for the per coordinate's values in [FIRST, END).
  if (auto r = node.find("per_range")) {
    if (t.per.empty()) r->fail("\"per_range\" without \"per\"", "\"per\" naming the coordinate the range is over");
    auto bounds = r->items("[FIRST, END], two integer expressions");
    if (bounds.size() != 2) r->fail(describe(r->value()), "[FIRST, END], two integer expressions");
    t.per_first = bounds[0].expression("the first value of the per coordinate with an instance");
    t.per_end = bounds[1].expression("one past the last value of the per coordinate with an instance");
  }
  if (auto s = node.find("size")) t.size = s->expression("the allocation size in elements");
  if (auto views = node.find("views")) {
    node.allow_only({"name", "per", "per_range", "shape", "size", "views"});
    if (auto s = node.find("shape")) t.shape = load_expressions(*s, "extent expressions");
    if (t.shape.empty() && !t.size)
      node.fail("\"views\" without \"shape\" or \"size\"", "the allocation's \"shape\" or \"size\"");
    for (const JsonNode& item : views->items("an array of views")) {
      item.allow_only({"name", "holds", "offset", "shape", "index", "stride_order", "strides"});
      t.views.push_back(load_view(item, t.name));
    }
    if (t.views.empty()) views->fail("no views", "at least one view");
  } else {
    node.allow_only({"name", "per", "per_range", "size", "holds", "offset", "shape", "index", "stride_order", "strides"});
    t.views.push_back(load_view(node, t.name));
  }
  return t;
}

TableDecl load_table(const std::string& name, const JsonNode& node) {
  node.allow_only({"length", "range"});
  TableDecl t;
  t.name = name;
  t.path = node.path();
  t.length = node.at("length", "the number of entries").expression("an integer expression");
  JsonNode range = node.at("range", "the entries' range: END for [0, END), or [FIRST, END]");
  if (range.value().is_array()) {
    auto bounds = range.items("[FIRST, END]");
    if (bounds.size() != 2) range.fail(describe(range.value()), "[FIRST, END], two expressions");
    t.first = bounds[0].expression("the first value an entry may take");
    t.end = bounds[1].expression("one past the last value an entry may take");
  } else {
    t.first = SourceExpr{expr::literal(0), range.path(), "0"};
    t.end = range.expression("one past the last value an entry may take");
  }
  return t;
}

ScaleDecl load_scale(const JsonNode& node, const Content& content) {
  node.allow_only({"dtype", "per", "note"});
  ScaleDecl s;
  s.path = node.path();
  JsonNode dt = node.at("dtype", "the scale's element type");
  std::string name = dt.string("an element type name");
  auto parsed = parse_dtype(name);
  if (!parsed) dt.fail("the element type \"" + name + "\"", "bf16, fp16, fp32, fp8_e4m3, fp8_e5m2, int8 or uint8");
  s.dtype = *parsed;
  for (const JsonNode& item : node.at("per", "the coordinates with one scale per value").items("an array")) {
    std::string c = item.name("a coordinate name");
    bool ok = false;
    for (const auto& coord : content.coords) ok = ok || coord.name == c;
    if (!ok) item.fail("the name \"" + c + "\"", "a coordinate of " + content.name);
    s.per.push_back(c);
  }
  if (auto n = node.find("note")) s.note = n->string("a string");
  return s;
}

// "ranks": {"tp_rank": "tp_size", ...}: each member a rank parameter over a size parameter, both declared.
std::vector<RankAxis> load_ranks(const JsonNode& node, const std::vector<std::string>& param_names) {
  std::vector<RankAxis> out;
  std::vector<std::string> used;
  auto members = node.members();
  if (members.empty()) node.fail("no rank axes", "{\"tp_rank\": \"tp_size\"} and/or {\"pp_rank\": \"pp_size\"}");
  for (auto& [rank, size_node] : members) {
    std::string size = size_node.name("the parameter giving the number of ranks, e.g. \"tp_size\"");
    if (rank == size) size_node.fail("a rank over itself", "a rank parameter over a different size parameter");
    for (const std::string& p : {rank, size}) {
      if (!contains(param_names, p))
        size_node.fail("\"" + p + "\", which is not a parameter", "a parameter declared in \"params\" (with its default)");
      if (contains(used, p)) size_node.fail("\"" + p + "\" in two rank axes", "each rank and size parameter once");
      used.push_back(p);
    }
    out.push_back(RankAxis{rank, size, size_node.path()});
  }
  return out;
}

// A thin declaration: {"name", "instance_of": FAMILY, "bind": {param: integer, ...}, "description"?,
// "engine"?, "notes"?, "cite"?} (without "cite", the family's). The family is read from the same directory; every rank parameter must be bound.
std::shared_ptr<const Layout> load_instance(const JsonNode& root, const std::string& file) {
  root.allow_only({"name", "engine", "description", "notes", "instance_of", "bind", "cite", "observed"});
  std::string name = root.at("name", "the layout's name").name("the file's stem, a non-empty string");
  std::string stem = std::filesystem::path(file).stem().string();
  if (name != stem) root.at("name", "").fail("the name \"" + name + "\"", "the file's stem \"" + stem + "\"");
  JsonNode of = root.at("instance_of", "the family this declaration binds");
  std::string family_name = of.name("the name of a rank family in the same directory");
  if (family_name == stem) of.fail("the declaration itself", "another declaration, a rank family");
  std::filesystem::path family_file = std::filesystem::path(file).parent_path() / (family_name + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(family_file, ec))
    of.fail("\"" + family_name + "\", with no " + family_file.string(), "a rank family's file beside this one");
  Json family_doc = read_json_file(family_file.string());
  if (JsonNode(family_doc, family_file.string(), "").find("instance_of"))
    of.fail("\"" + family_name + "\", itself a thin declaration", "a rank family (a declaration with \"ranks\")");
  std::shared_ptr<const Layout> family = load_layout(family_file.string());
  if (!is_family(*family)) of.fail("\"" + family_name + "\", which has no \"ranks\"", "a rank family");
  std::map<std::string, std::int64_t> values;
  JsonNode bind = root.at("bind", "the parameters this instance binds, e.g. {\"tp_size\": 2, \"tp_rank\": 0}");
  for (auto& [param, node] : bind.members()) {
    bool declared = false;
    for (const auto& p : family->params) declared = declared || p.name == param;
    if (!declared) node.fail("\"" + param + "\", not a parameter of " + family_name, "a parameter of the family");
    values[param] = node.integer("an integer");
  }
  for (const auto& axis : family->ranks)
    if (!values.count(axis.rank))
      bind.fail("no value for the rank parameter \"" + axis.rank + "\"", "every rank parameter of " + family_name + " bound");
  auto instance = std::make_shared<Layout>(*with_params(*family, values, name));
  instance->file = file;
  instance->instance_of = family_name;
  if (auto e = root.find("engine")) instance->engine = e->name("a non-empty string");
  if (auto d = root.find("description")) instance->description = d->string("a string");
  if (auto c = root.find("cite")) instance->cite = load_citation(*c);  // else the family's
  instance->observed.reset();  // an observation is of one declaration, never inherited
  if (auto o = root.find("observed")) instance->observed = load_observation(*o, instance->cite);
  return instance;
}

}  // namespace

std::string format_citation(const Citation& c) {
  std::string at = c.commit.empty() ? c.version : c.commit;
  return c.repo + "@" + at + ":" + c.path + "::" + c.symbol;
}

std::shared_ptr<const Layout> load_layout(const std::string& file) {
  Json doc = read_json_file(file);
  JsonNode root(doc, file, "");
  if (root.find("instance_of")) return load_instance(root, file);
  root.allow_only({"name", "engine", "description", "control", "cite", "content", "coords", "dtype", "scale",
                   "params", "requires", "tables", "holds", "tensors", "notes", "ranks", "observed"});
  auto layout = std::make_shared<Layout>();
  Layout& L = *layout;
  L.file = file;
  L.name = root.at("name", "the layout's name").name("the file's stem, a non-empty string");
  std::string stem = std::filesystem::path(file).stem().string();
  if (L.name != stem) root.at("name", "").fail("the name \"" + L.name + "\"", "the file's stem \"" + stem + "\"");
  L.engine = root.at("engine", "the engine and backend this layout describes").name("a non-empty string");
  if (auto d = root.find("description")) L.description = d->string("a string");
  if (auto c = root.find("control")) L.control = c->boolean("true for a made-up layout");
  if (auto c = root.find("cite")) L.cite = load_citation(*c);
  else if (!L.control)
    root.fail("no \"cite\"",
              "\"cite\": {repo, path, symbol, commit or version} naming the engine source, or \"control\": true");
  if (auto o = root.find("observed")) {
    if (L.control) o->fail("an observation of a control", "no \"observed\" on a made-up layout");
    L.observed = load_observation(*o, L.cite);
  }
  if (auto n = root.find("notes")) {
    if (!n->value().is_string() && !n->value().is_array()) n->fail(describe(n->value()), "a string or an array of strings");
  }
  L.content = load_content(root);
  JsonNode dt = root.at("dtype", "the element type");
  std::string dtname = dt.string("an element type name");
  auto parsed = parse_dtype(dtname);
  if (!parsed) dt.fail("the element type \"" + dtname + "\"", "bf16, fp16, fp32, fp8_e4m3, fp8_e5m2, int8 or uint8");
  L.dtype = *parsed;
  if (auto s = root.find("scale")) L.scale = load_scale(*s, L.content);

  std::vector<std::string> coord_names;
  for (const auto& c : L.content.coords) coord_names.push_back(c.name);
  const auto& cache_names = cache_parameter_names();

  if (auto params = root.find("params")) {
    for (auto& [pname, node] : params->members()) {
      check_identifier(node, pname, "a parameter");
      if (contains(coord_names, pname) || contains(cache_names, pname))
        node.fail("a parameter named \"" + pname + "\"",
                  "a name that is not a coordinate or cache-shape parameter");
      L.params.push_back(Parameter{pname, node.expression("an integer expression")});
    }
  }
  std::vector<std::string> param_names;
  for (const auto& p : L.params) param_names.push_back(p.name);

  if (auto tables = root.find("tables")) {
    for (auto& [tname, node] : tables->members()) {
      check_identifier(node, tname, "a table");
      if (contains(coord_names, tname) || contains(cache_names, tname) || contains(param_names, tname))
        node.fail("a table named \"" + tname + "\"", "a name not used by a coordinate or parameter");
      L.tables.push_back(load_table(tname, node));
    }
  }
  std::vector<std::string> table_names;
  for (const auto& t : L.tables) table_names.push_back(t.name);

  if (auto req = root.find("requires")) L.requirements = load_expressions(*req, "truth-valued expressions");
  if (auto h = root.find("holds")) L.holds = h->expression("a truth-valued expression over coordinates");
  JsonNode tensors = root.at("tensors", "an array of tensors");
  for (const JsonNode& t : tensors.items("an array of tensors")) L.tensors.push_back(load_tensor(t));
  if (L.tensors.empty()) tensors.fail("no tensors", "at least one tensor");

  // Names and types, each in the scope where it is written.
  const Scope sizes{{}, param_names, {}, true};
  const Scope domain{coord_names, param_names, {}, true};
  const Scope index{coord_names, param_names, table_names, true};
  for (const auto& c : L.content.coords) check_expression(c.extent, sizes, Type::Integer, file);
  for (const auto& p : L.params) check_expression(p.value, sizes, Type::Integer, file);
  for (const auto& r : L.requirements) check_expression(r, sizes, Type::Truth, file);
  for (const auto& t : L.tables) {
    check_expression(t.length, sizes, Type::Integer, file);
    check_expression(t.first, sizes, Type::Integer, file);
    check_expression(t.end, sizes, Type::Integer, file);
  }
  if (L.holds) check_expression(*L.holds, domain, Type::Truth, file);
  std::vector<std::string> tensor_names;
  for (const auto& t : L.tensors) {
    if (contains(tensor_names, t.name))
      throw SpecError(file, t.path + "/name", "a second tensor named \"" + t.name + "\"", "unique tensor names");
    tensor_names.push_back(t.name);
    if (!t.per.empty() && !contains(coord_names, t.per))  // empty: no "per" (load_tensor rejects "per": "")
      throw SpecError(file, t.path + "/per", "\"" + t.per + "\"", "a coordinate of " + L.content.name);
    if (t.per_first) check_expression(*t.per_first, sizes, Type::Integer, file);
    if (t.per_end) check_expression(*t.per_end, sizes, Type::Integer, file);
    for (const auto& e : t.shape) check_expression(e, sizes, Type::Integer, file);
    if (t.size) check_expression(*t.size, sizes, Type::Integer, file);
    for (const auto& v : t.views) {
      if (v.holds) check_expression(*v.holds, domain, Type::Truth, file);
      if (v.offset) check_expression(*v.offset, sizes, Type::Integer, file);
      for (const auto& e : v.shape) check_expression(e, sizes, Type::Integer, file);
      for (const auto& e : v.strides) check_expression(e, sizes, Type::Integer, file);
      for (const auto& e : v.index) check_expression(e, index, Type::Integer, file);
    }
  }
  parameter_order(L.params, file);  // throws on a cycle
  if (auto r = root.find("ranks")) L.ranks = load_ranks(*r, param_names);
  return layout;
}

}  // namespace kvlayout::spec

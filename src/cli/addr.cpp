// kvlayout addr: the address of one logical coordinate under a layout bound to a cache shape.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/inputs.hpp"
#include "enumerate/address_map.hpp"
#include "enumerate/limits.hpp"
#include "layout/address.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::cli {
namespace {

const char* kHelp = R"(usage: kvlayout addr LAYOUT --cache CACHE [--specs DIR] [--table NAME=v0,v1,...]
                     [--param NAME=VALUE] (COORD... | --all) [--json]

Computes where one logical coordinate lives: tensor, instance, element offset and byte offset; with
--all, where every position of the cache lives (for reading a real cache back through the declaration,
as conformance/ does).

  LAYOUT, CACHE          a name under --specs (default: the shipped specs/) or a path to a JSON file
  COORD                  one NAME=VALUE per coordinate, e.g. layer=1 kv=0 token=7 head=2 dim=5
                         (kv also accepts K or V)
  --table NAME=v0,v1,..  the entries of a block table (default: identity); distinct, within its range
  --param NAME=VALUE     override a layout parameter (e.g. block_size=32) or cache-shape parameter
  --all                  every position, row-major over the coordinates (last fastest); at most 2^21
  --json                 print {"tensor", "instance", "offset", "byte_offset", ...}; with --all
                         {"coords", "extents", "tensors", "element_bytes", "addresses"}, one address per
                         position: [tensor index, instance, byte offset], or null where not held

Exit: 0 held and in bounds (with --all: every held position is); 1 the layout does not hold the
coordinate ({"held": false}) or its address is out of bounds (with --all: some held position's is; the
first is named); 2 bad input (unknown name, coordinate out of range, layout does not fit the cache, --all
on a box over the limit).
)";

std::vector<std::int64_t> parse_coordinates(const layout::BoundLayout& bound, const std::vector<std::string>& items) {
  std::vector<std::int64_t> coord(bound.coord_names.size());
  std::vector<bool> given(coord.size(), false);
  for (const std::string& item : items) {
    auto [name, value] = split_assignment(item, "the coordinate");
    int i = bound.coord_index(name);
    if (i < 0) {
      std::string names;
      for (const auto& n : bound.coord_names) names += (names.empty() ? "" : ", ") + n;
      throw spec::SpecError("", "", "the coordinate name \"" + name + "\"",
                            "a coordinate of " + bound.layout->content.name + ": " + names);
    }
    if (given[static_cast<std::size_t>(i)])
      throw spec::SpecError("", "", name + " given twice", "each coordinate once");
    given[static_cast<std::size_t>(i)] = true;
    std::int64_t v;
    if (name == "kv" && (value == "K" || value == "k")) v = 0;
    else if (name == "kv" && (value == "V" || value == "v")) v = 1;
    else v = parse_integer(value, "the coordinate " + name);
    coord[static_cast<std::size_t>(i)] = v;
  }
  std::string missing;
  for (std::size_t i = 0; i < coord.size(); ++i)
    if (!given[i]) missing += (missing.empty() ? "" : ", ") + bound.coord_names[i];
  if (!missing.empty()) throw spec::SpecError("", "", "no value for " + missing, "NAME=VALUE for every coordinate");
  return coord;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// --all: every position located once through the one concrete evaluator (layout::locate).
int print_all_addresses(const spec::Layout& decl, const spec::CacheShape& cache, const layout::BoundLayout& bound,
                        const layout::BlockTables& tables, bool json) {
  const std::int64_t positions = enumerate::box_size(bound);
  if (positions > enumerate::kEnumerationLimit)
    throw spec::SpecError(cache.file, "", std::to_string(positions) + " positions on cache shape " + cache.name,
                          "at most " + std::to_string(enumerate::kEnumerationLimit) + " for --all (a smaller cache shape)");
  spec::Json addresses = spec::Json::array();
  std::int64_t held = 0;
  std::string first_violation;
  for (std::int64_t p = 0; p < positions; ++p) {
    const std::vector<std::int64_t> coord = enumerate::coordinate_of(bound, p);
    const layout::Location loc = layout::locate(bound, coord, tables);
    if (loc.placement == layout::Placement::NotHeld) {
      if (json) addresses.push_back(nullptr);
      continue;
    }
    if (loc.placement == layout::Placement::OutOfBounds) {
      first_violation = layout::format_coordinate(bound, coord) + ": " + loc.violation;
      break;
    }
    ++held;
    const std::int64_t byte = layout::byte_offset(bound, loc.address);
    if (json) {
      addresses.push_back(spec::Json::array({loc.address.tensor, loc.address.instance, byte}));
    } else {
      const layout::BoundTensor& tensor = bound.tensors[static_cast<std::size_t>(loc.address.tensor)];
      std::cout << layout::format_coordinate(bound, coord) << " -> " << tensor.name << "[" << loc.address.instance
                << "] byte " << byte << "\n";
    }
  }
  if (!first_violation.empty()) {
    if (json) std::cout << spec::Json{{"in_bounds", false}, {"violation", first_violation}}.dump() << "\n";
    else std::cout << decl.name << " on " << cache.name << ": OUT OF BOUNDS at " << first_violation << "\n";
    return kNegative;
  }
  if (json) {
    spec::Json tensors = spec::Json::array();
    for (const auto& t : bound.tensors) tensors.push_back(t.name);
    spec::Json out = {{"layout", decl.name}, {"cache", cache.name}, {"coords", bound.coord_names},
                      {"extents", bound.coord_extents}, {"tensors", tensors},
                      {"element_bytes", bound.element_bytes()},
                      {"held", held}, {"addresses", std::move(addresses)}};
    std::cout << out.dump() << "\n";
  }
  return kOk;
}

}  // namespace

int run_addr(const std::vector<std::string>& argv) {
  Arguments args(argv, {{"specs", true}, {"cache", true}, {"table", true, true}, {"param", true, true}, {"json", false}, {"all", false}});
  if (args.help()) {
    std::cout << kHelp;
    return kOk;
  }
  if (args.positional().empty()) throw spec::SpecError("", "", "no LAYOUT", "kvlayout addr LAYOUT --cache CACHE COORD...");
  spec::Catalog catalog = catalog_from(args);
  auto decl = layout_from(catalog, args.positional().front());
  spec::CacheShape cache = cache_from(catalog, args);
  layout::BoundLayout bound = layout::bind(decl, cache, overrides_from(args));
  if (!bound.fits()) {
    const layout::Misfit& m = bound.misfits.front();
    throw spec::SpecError(decl->file, m.path,
                          "that " + decl->name + " does not fit cache shape " + cache.name + " (" + cache.file + "): " + m.what,
                          "a cache shape that binds every parameter the layout reads (in its /params) and meets the "
                          "layout's requirements");
  }
  layout::BlockTables tables = layout::identity_tables(bound);
  for (const std::string& t : args.values("table")) {
    auto [name, list] = split_assignment(t, "--table");
    std::vector<std::int64_t> entries;
    std::size_t start = 0;
    while (start <= list.size() && !list.empty()) {
      std::size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      entries.push_back(parse_integer(item, "--table " + name + " entry"));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    layout::set_table(bound, tables, name, entries);
  }
  std::vector<std::string> coord_items(args.positional().begin() + 1, args.positional().end());
  if (args.has("all")) {
    if (!coord_items.empty())
      throw spec::SpecError("", "", "--all and the coordinate " + coord_items.front(), "either COORD... or --all");
    return print_all_addresses(*decl, cache, bound, tables, args.has("json"));
  }
  std::vector<std::int64_t> coord = parse_coordinates(bound, coord_items);
  layout::Location loc = layout::locate(bound, coord, tables);

  const bool json = args.has("json");
  if (loc.placement == layout::Placement::NotHeld) {
    if (json) std::cout << spec::Json{{"held", false}}.dump() << "\n";
    else std::cout << decl->name << " on " << cache.name << ": " << layout::format_coordinate(bound, coord)
                   << " is not held by this layout\n";
    return kNegative;
  }
  const layout::BoundTensor& tensor = bound.tensors[static_cast<std::size_t>(loc.address.tensor)];
  const layout::BoundView& view = tensor.views[static_cast<std::size_t>(loc.address.view)];
  const bool in_bounds = loc.placement == layout::Placement::Held;
  if (json) {
    spec::Json out = {{"held", true}, {"in_bounds", in_bounds}, {"tensor", tensor.name}, {"view", view.name},
                      {"instance", loc.address.instance}, {"offset", loc.address.offset}};
    out["byte_offset"] = in_bounds ? spec::Json(layout::byte_offset(bound, loc.address)) : spec::Json(nullptr);
    out["index"] = loc.address.index;
    if (!in_bounds) out["violation"] = loc.violation;
    std::cout << out.dump() << "\n";
  } else {
    std::cout << decl->name << " on " << cache.name << ": " << layout::format_coordinate(bound, coord) << "\n"
              << "  tensor   " << tensor.name << "[" << loc.address.instance << "]"
              << (view.name != tensor.name ? "  view " + view.name : "") << "\n"
              << "  index    " << join(loc.address.index) << " in shape " << join(view.extents) << ", strides "
              << join(view.strides) << "\n"
              << "  element  " << loc.address.offset << "\n";
    if (in_bounds) std::cout << "  byte     " << layout::byte_offset(bound, loc.address) << "\n";
    else std::cout << "  OUT OF BOUNDS: " << loc.violation << "\n";
  }
  return in_bounds ? kOk : kNegative;
}

}  // namespace kvlayout::cli

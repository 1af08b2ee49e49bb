#include "cli/inputs.hpp"

#include "spec/error.hpp"

namespace kvlayout::cli {

spec::Catalog catalog_from(const Arguments& args) {
  return spec::Catalog(args.value("specs").value_or(spec::default_specs_dir().string()));
}

std::shared_ptr<const spec::Layout> layout_from(const spec::Catalog& catalog, const std::string& name_or_path) {
  return spec::load_layout(catalog.find_layout(name_or_path).string());
}

spec::CacheShape cache_from(const spec::Catalog& catalog, const Arguments& args) {
  auto name = args.value("cache");
  if (!name) throw spec::SpecError("", "", "no --cache", "--cache NAME (e.g. small) or a path to a cache JSON");
  return spec::load_cache(catalog.find_cache(*name).string());
}

layout::Overrides overrides_from(const Arguments& args) {
  layout::Overrides out;
  for (const std::string& p : args.values("param")) {
    auto [name, value] = split_assignment(p, "--param");
    out[name] = parse_integer(value, "--param " + name);
  }
  return out;
}

std::map<std::string, std::int64_t> side_params_from(const Arguments& args, const std::string& flag) {
  std::map<std::string, std::int64_t> out;
  for (const std::string& p : args.values(flag)) {
    auto [name, value] = split_assignment(p, "--" + flag);
    out[name] = parse_integer(value, "--" + flag + " " + name);
  }
  return out;
}

std::optional<GroupPair> groups_from(LayoutPair& pair, const Arguments& args) {
  auto source_params = side_params_from(args, "source-param");
  auto target_params = side_params_from(args, "target-param");
  if (!spec::is_family(*pair.source) && !spec::is_family(*pair.target)) {
    if (!source_params.empty()) pair.source = spec::with_params(*pair.source, source_params, pair.source->name);
    if (!target_params.empty()) pair.target = spec::with_params(*pair.target, target_params, pair.target->name);
    return std::nullopt;
  }
  layout::Overrides overrides = overrides_from(args);
  return GroupPair{layout::expand_group(pair.source, pair.cache, source_params, overrides),
                   layout::expand_group(pair.target, pair.cache, target_params, overrides)};
}

LayoutPair pair_from(const spec::Catalog& catalog, const Arguments& args) {
  LayoutPair out;
  out.source = layout_from(catalog, args.positional().at(0));
  out.target = layout_from(catalog, args.positional().at(1));
  out.cache = cache_from(catalog, args);
  return out;
}

layout::BoundLayout bind_fitting(std::shared_ptr<const spec::Layout> layout, const spec::CacheShape& cache,
                                 const layout::Overrides& overrides) {
  layout::BoundLayout b = layout::bind(std::move(layout), cache, overrides);
  if (!b.fits())
    throw spec::SpecError(b.layout->file, b.misfits.front().path, b.layout->name + " on " + cache.name + ": " +
                                                                     b.misfits.front().what,
                          "a layout that fits the cache shape");
  return b;
}

std::int64_t limit_ms_from(const Arguments& args, std::int64_t fallback) {
  auto limit = args.value("limit-ms");
  if (!limit) return fallback;
  std::int64_t ms = parse_integer(*limit, "--limit-ms");
  if (ms < 1) throw spec::SpecError("", "", "--limit-ms " + *limit, "a positive number of milliseconds");
  return ms;
}

}  // namespace kvlayout::cli

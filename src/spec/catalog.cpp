#include "spec/catalog.hpp"

#include <algorithm>
#include <cstdlib>

#include "spec/error.hpp"
#include "spec/layout.hpp"

#ifndef KVLAYOUT_SOURCE_SPECS_DIR
#define KVLAYOUT_SOURCE_SPECS_DIR "specs"
#endif

namespace fs = std::filesystem;

namespace kvlayout::spec {
namespace {

bool is_json(const fs::path& p) { return p.extension() == ".json"; }

fs::path find(const std::vector<fs::path>& files, const std::string& name_or_path, const std::string& kind,
              const fs::path& root) {
  fs::path as_path(name_or_path);
  bool looks_like_path = name_or_path.find('/') != std::string::npos || is_json(as_path);
  if (looks_like_path) {
    std::error_code ec;
    if (fs::is_regular_file(as_path, ec)) return as_path;
    throw SpecError(name_or_path, "", "no such file", "a path to a " + kind + " JSON file, or a " + kind + " name");
  }
  for (const auto& f : files)
    if (f.stem() == name_or_path) return f;
  std::string names;
  for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.stem().string();
  throw SpecError("", "", "no " + kind + " named \"" + name_or_path + "\" in " + root.string(),
                  "one of: " + names + " (or a path to a JSON file)");
}

}  // namespace

fs::path default_specs_dir() {
  if (const char* env = std::getenv("KVLAYOUT_SPECS"); env && *env) return fs::path(env);
  return fs::path(KVLAYOUT_SOURCE_SPECS_DIR);
}

Catalog::Catalog(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  if (!fs::is_directory(root_, ec))
    throw SpecError(root_.string(), "", "no such directory", "a specs directory (with caches/ and layout files)");
}

std::vector<fs::path> Catalog::layout_files() const {
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(root_); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename() == "caches" && it.depth() == 0) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_json(it->path())) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> Catalog::cache_files() const {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(root_ / "caches", ec)) return out;
  for (const auto& entry : fs::directory_iterator(root_ / "caches"))
    if (entry.is_regular_file() && is_json(entry.path())) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path Catalog::find_layout(const std::string& name_or_path) const {
  return find(layout_files(), name_or_path, "layout", root_);
}

fs::path Catalog::find_cache(const std::string& name_or_path) const {
  return find(cache_files(), name_or_path, "cache shape", root_);
}

std::vector<std::shared_ptr<const Layout>> load_layouts(const Catalog& catalog) {
  std::vector<std::shared_ptr<const Layout>> layouts;
  for (const auto& f : catalog.layout_files()) layouts.push_back(load_layout(f.string()));
  std::sort(layouts.begin(), layouts.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a->control, a->name) < std::make_pair(b->control, b->name);
  });
  return layouts;
}

}  // namespace kvlayout::spec

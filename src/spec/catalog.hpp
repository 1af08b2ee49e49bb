#pragma once
// Where declarations live: a specs directory holds caches/*.json (cache shapes) and every other *.json below
// it is a layout (engines/, controls/, or a user's own folder). A LAYOUT or CACHE argument is a name found
// there, or a path to a JSON file.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kvlayout::spec {

// $KVLAYOUT_SPECS if set, else the specs/ directory of the source tree this binary was built from.
std::filesystem::path default_specs_dir();

class Catalog {
 public:
  explicit Catalog(std::filesystem::path root);  // throws SpecError if root is not a directory

  const std::filesystem::path& root() const { return root_; }
  std::vector<std::filesystem::path> layout_files() const;  // sorted by path
  std::vector<std::filesystem::path> cache_files() const;   // sorted by path
  // A name (file stem) or a path to an existing .json file; throws SpecError listing the known names.
  std::filesystem::path find_layout(const std::string& name_or_path) const;
  std::filesystem::path find_cache(const std::string& name_or_path) const;

 private:
  std::filesystem::path root_;
};

struct Layout;
// Every layout of the catalog, loaded: engines by name, then controls by name.
std::vector<std::shared_ptr<const Layout>> load_layouts(const Catalog& catalog);

}  // namespace kvlayout::spec

#pragma once
// A cache shape: the sizes that bind a layout (a model configuration at a sequence length).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvlayout::spec {

// The parameter names a cache shape may bind and a layout may read.
const std::vector<std::string>& cache_parameter_names();

struct CacheCitation {
  std::string repo, path, url, commit, note;
};

struct CacheShape {
  std::string name;
  std::string file;
  std::string model;
  std::string description;
  bool synthetic = false;  // made up for enumeration; no model config behind it
  std::optional<CacheCitation> cite;
  std::map<std::string, std::int64_t> params;

  std::optional<std::int64_t> get(const std::string& param) const;
};

// @post every parameter is a known name with a positive value; throws SpecError otherwise.
CacheShape load_cache(const std::string& file);

}  // namespace kvlayout::spec

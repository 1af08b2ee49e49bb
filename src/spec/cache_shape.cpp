#include "spec/cache_shape.hpp"

#include <filesystem>

#include "spec/error.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::spec {

const std::vector<std::string>& cache_parameter_names() {
  static const std::vector<std::string> names = {"num_layers", "num_kv_heads", "head_size",
                                                 "num_tokens", "kv_lora_rank", "qk_rope_head_dim"};
  return names;
}

std::optional<std::int64_t> CacheShape::get(const std::string& param) const {
  auto it = params.find(param);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

CacheShape load_cache(const std::string& file) {
  Json doc = read_json_file(file);
  JsonNode root(doc, file, "");
  root.allow_only({"name", "model", "description", "synthetic", "cite", "params"});
  CacheShape c;
  c.file = file;
  c.name = root.at("name", "the cache shape's name").name("the file's stem, a non-empty string");
  std::string stem = std::filesystem::path(file).stem().string();
  if (c.name != stem)
    root.at("name", "").fail("the name \"" + c.name + "\"", "the file's stem \"" + stem + "\"");
  if (auto m = root.find("model")) c.model = m->string("the model's name, a string");
  if (auto d = root.find("description")) c.description = d->string("a string");
  if (auto s = root.find("synthetic")) c.synthetic = s->boolean("true or false");
  if (auto cite = root.find("cite")) {
    cite->allow_only({"repo", "path", "url", "commit", "note"});
    CacheCitation cc;
    cc.repo = cite->at("repo", "the repository holding config.json").name("a non-empty string");
    cc.path = cite->at("path", "the config file's path").name("a non-empty string");
    if (auto u = cite->find("url")) cc.url = u->string("a string");
    if (auto k = cite->find("commit")) cc.commit = k->string("a string");
    if (auto n = cite->find("note")) cc.note = n->string("a string");
    c.cite = cc;
  } else if (!c.synthetic) {
    root.fail("no \"cite\"", "\"cite\": {repo, path} of the model's config.json, or \"synthetic\": true");
  }
  const auto& known = cache_parameter_names();
  for (auto& [key, node] : root.at("params", "an object of cache-shape parameters").members()) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      node.fail("an unknown cache-shape parameter \"" + key + "\"", "one of: " + list);
    }
    std::int64_t v = node.integer("a positive integer");
    if (v <= 0) node.fail("the integer " + std::to_string(v), "a positive integer");
    c.params[key] = v;
  }
  return c;
}

}  // namespace kvlayout::spec

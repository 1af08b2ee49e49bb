#include "spec/content.hpp"

#include "expr/parse.hpp"

namespace kvlayout::spec {
namespace {
Coordinate coordinate(const std::string& content, const std::string& name, const std::string& extent) {
  return Coordinate{name, SourceExpr{expr::parse(extent), "(built-in content " + content + ")", extent}};
}
}  // namespace

std::vector<std::string> builtin_content_names() { return {"kv-heads", "mla-latent"}; }

std::optional<Content> builtin_content(const std::string& name) {
  if (name == "kv-heads")
    return Content{name,
                   {coordinate(name, "layer", "num_layers"), coordinate(name, "kv", "2"),
                    coordinate(name, "token", "num_tokens"), coordinate(name, "head", "num_kv_heads"),
                    coordinate(name, "dim", "head_size")},
                   true};
  if (name == "mla-latent")
    return Content{name,
                   {coordinate(name, "layer", "num_layers"), coordinate(name, "token", "num_tokens"),
                    coordinate(name, "latent", "kv_lora_rank + qk_rope_head_dim")},
                   true};
  return std::nullopt;
}

}  // namespace kvlayout::spec

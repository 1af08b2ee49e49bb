#pragma once
// What a layout holds: the names and extents of its logical coordinates. Two layouts translate by
// rearrangement only if they hold the same content.
#include <optional>
#include <string>
#include <vector>

#include "spec/source_expr.hpp"

namespace kvlayout::spec {

struct Coordinate {
  std::string name;
  SourceExpr extent;  // over cache-shape (and layout) parameters
};

struct Content {
  std::string name;
  std::vector<Coordinate> coords;
  bool builtin = false;
};

// kv-heads = (layer, kv, token, head, dim); mla-latent = (layer, token, latent).
std::optional<Content> builtin_content(const std::string& name);
std::vector<std::string> builtin_content_names();

}  // namespace kvlayout::spec

#include "layout/content_match.hpp"

namespace kvlayout::layout {
namespace {

std::string describe(const spec::Content& c) {
  std::string s = c.name + " (";
  for (std::size_t i = 0; i < c.coords.size(); ++i) s += (i ? ", " : "") + c.coords[i].name;
  return s + ")";
}

}  // namespace

std::optional<std::string> content_mismatch(const BoundLayout& source, const BoundLayout& target) {
  const spec::Content& s = source.layout->content;
  const spec::Content& t = target.layout->content;
  bool same = s.name == t.name && s.coords.size() == t.coords.size();
  for (std::size_t i = 0; same && i < s.coords.size(); ++i) same = s.coords[i].name == t.coords[i].name;
  if (!same) return source.layout->name + " holds " + describe(s) + "; " + target.layout->name + " holds " + describe(t);
  if (source.coord_extents.size() != s.coords.size() || target.coord_extents.size() != t.coords.size()) return std::nullopt;
  for (std::size_t i = 0; i < s.coords.size(); ++i)
    if (source.coord_extents[i] != target.coord_extents[i])
      return "both hold " + describe(s) + ", but coordinate " + s.coords[i].name + " has extent " +
             std::to_string(source.coord_extents[i]) + " in " + source.layout->name + " and " +
             std::to_string(target.coord_extents[i]) + " in " + target.layout->name + " on cache shape " + source.cache.name;
  return std::nullopt;
}

}  // namespace kvlayout::layout

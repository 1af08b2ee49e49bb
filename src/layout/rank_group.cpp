#include "layout/rank_group.hpp"

#include "spec/error.hpp"

namespace kvlayout::layout {

std::string Group::label(std::size_t member) const {
  const auto& rank = members.at(member).rank;
  if (rank.empty()) return "whole";
  if (rank.size() == 1) return "rank " + std::to_string(rank[0].second);
  std::string out;
  for (const auto& [name, value] : rank) out += (out.empty() ? "" : ", ") + name + " " + std::to_string(value);
  return out;
}

std::string Group::who(std::size_t member, const std::string& word) const {
  return is_family() ? word + " " + label(member) : word;
}

std::string Group::title() const {
  if (sizes.empty()) return declaration->name;
  std::string out;
  for (const auto& [name, value] : sizes) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return declaration->name + " (" + out + ")";
}

namespace {

std::string instance_name(const std::string& family, const std::vector<std::pair<std::string, std::int64_t>>& rank) {
  std::string out;
  for (const auto& [name, value] : rank) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return family + "[" + out + "]";
}

}  // namespace

Group expand_group(std::shared_ptr<const spec::Layout> declaration, const spec::CacheShape& cache,
                   const std::map<std::string, std::int64_t>& params, const Overrides& overrides) {
  Group g;
  g.declaration = declaration;
  const spec::Layout& L = *declaration;
  for (const auto& axis : L.ranks)
    if (params.count(axis.rank) || overrides.count(axis.rank))
      throw spec::SpecError(L.file, axis.path, "the rank parameter \"" + axis.rank + "\" bound for the whole group",
                            "a group over every rank (bind " + axis.size + "; a single rank is a layout of its own)");
  auto base = spec::with_params(L, params, L.name);
  if (!spec::is_family(L)) {
    g.members.push_back(GroupMember{base, {}});
    return g;
  }
  // The sizes, read from the family bound at rank 0 (they may depend on the cache shape).
  std::map<std::string, std::int64_t> first;
  for (const auto& axis : L.ranks) first[axis.rank] = 0;
  BoundLayout probe = bind(spec::with_params(*base, first, L.name), cache, overrides);
  std::int64_t total = 1;
  for (const auto& axis : L.ranks) {
    auto it = probe.values.find(axis.size);
    if (it == probe.values.end())  // the family does not bind here: one member, whose misfit says why
      return Group{declaration, {}, {GroupMember{spec::with_params(*base, first, instance_name(L.name, {})), {}}}};
    if (it->second < 1 || it->second > max_group_members)
      throw spec::SpecError(L.file, axis.path, axis.size + " = " + std::to_string(it->second),
                            "1 <= " + axis.size + " <= " + std::to_string(max_group_members));
    g.sizes[axis.size] = it->second;
    total *= it->second;
    if (total > max_group_members)
      throw spec::SpecError(L.file, "/ranks", std::to_string(total) + " instances",
                            "at most " + std::to_string(max_group_members));
  }
  for (std::int64_t linear = 0; linear < total; ++linear) {
    std::vector<std::pair<std::string, std::int64_t>> rank(L.ranks.size());
    std::int64_t rest = linear;
    for (std::size_t a = L.ranks.size(); a-- > 0;) {
      std::int64_t size = g.sizes.at(L.ranks[a].size);
      rank[a] = {L.ranks[a].rank, rest % size};
      rest /= size;
    }
    std::map<std::string, std::int64_t> values(rank.begin(), rank.end());
    g.members.push_back(GroupMember{spec::with_params(*base, values, instance_name(L.name, rank)), rank});
  }
  return g;
}

}  // namespace kvlayout::layout

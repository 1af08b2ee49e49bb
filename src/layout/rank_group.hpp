#pragma once
// A rank family expanded into its instances on one cache shape: one declaration per combination of rank
// values (the family with its size and rank parameters bound to literals), each a normal layout. A layout
// that is not a family is a group of one member with no rank. A group translation (prove/group.hpp) maps
// one group to another.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "layout/bound_layout.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::layout {

struct GroupMember {
  std::shared_ptr<const spec::Layout> layout;   // the instance's declaration (named "family[tp_rank=1]")
  std::vector<std::pair<std::string, std::int64_t>> rank;  // rank parameter values, in the family's order
};

struct Group {
  std::shared_ptr<const spec::Layout> declaration;  // the family (or the plain layout)
  std::map<std::string, std::int64_t> sizes;        // each rank axis's size parameter, bound
  std::vector<GroupMember> members;                 // row-major over the rank axes (the last fastest)

  bool is_family() const { return !declaration->ranks.empty(); }
  // "rank 1" (one rank axis), "tp_rank 1, pp_rank 0" (several), "whole" (not a family).
  std::string label(std::size_t member) const;
  // "source rank 1" for word "source", or just "source" for a whole layout (a group of one).
  std::string who(std::size_t member, const std::string& word) const;
  // "vllm-flash-nhd-tp (tp_size=2)" or the plain name.
  std::string title() const;
};

// Largest number of instances a group may have (a guard against a size parameter bound to 10^9).
constexpr std::int64_t max_group_members = 1024;

// Expands `declaration` with its parameters `params` bound (a side's --source-param/--target-param;
// layout parameters only) on `cache` with the shared `overrides` (--param).
// @post members.size() == product of sizes (1 when not a family); throws SpecError for a parameter the
// layout lacks, a size below 1 or a group over max_group_members.
Group expand_group(std::shared_ptr<const spec::Layout> declaration, const spec::CacheShape& cache,
                   const std::map<std::string, std::int64_t>& params, const Overrides& overrides = {});

}  // namespace kvlayout::layout

#pragma once
// Reading the concrete plan forms' JSON (specs/plans.md): addresses, descriptor lists, strided runs, pairs,
// regions, block tables and the scope. Every malformed member is a SpecError naming the plan file, the JSON
// pointer, what was found and what was expected; nothing here decides a verdict. Lists of a million
// descriptors are read without building a path string per entry (paths are built only to report an error).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "expr/expr.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

// Strided descriptors: `count` descriptors of `len` bytes at addr, addr + stride, ... A plain descriptor is
// a run of count 1. `path` is the JSON pointer of the list entry.
struct DescriptorRun {
  std::int64_t addr = 0;
  std::int64_t len = 0;
  std::int64_t stride = 0;
  std::int64_t count = 1;
};

// One side's descriptors, in list order, as runs; `first[k]` is the index of run k's first descriptor.
struct DescriptorList {
  std::string member;               // "source_descriptors", "target_runs", ...
  bool runs = false;                // given as strided runs
  std::vector<DescriptorRun> items;
  std::vector<std::int64_t> first;  // prefix counts; first.back() + items.back().count = size()
  std::int64_t size() const { return items.empty() ? 0 : first.back() + items.back().count; }
  // @pre 0 <= i < size(). The run holding descriptor i.
  std::size_t run_of(std::int64_t i) const;
  std::int64_t addr(std::int64_t i) const;
  std::int64_t len(std::int64_t i) const { return items[run_of(i)].len; }
  // "/source_runs/3 (descriptor 17)" or "/source_descriptors/17".
  std::string path(std::int64_t i) const;
};

// A registered region: the bytes [base, base + len) are instance `instance` of tensor `tensor`, from its
// first byte.
struct Region {
  int tensor = 0;
  std::int64_t instance = 0;
  std::int64_t base = 0;
  std::int64_t len = 0;  // default: the instance's allocation bytes
  std::string path;
};

// A paired copy: `len` bytes from source descriptor `source` to target descriptor `target` (indices into
// the lists), or, for `transfers`, from address src to address dst.
struct PairedCopy {
  std::int64_t src = 0;
  std::int64_t dst = 0;
  std::int64_t len = 0;
  std::int64_t index = 0;  // the pair's (or transfer's) index in the plan, for naming it
};

struct DescriptorPlan {
  std::vector<Region> source_regions, target_regions;
  // Either the two lists with their pairing, or `transfers` ({src, dst, len} records).
  std::optional<DescriptorList> source, target;
  std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> pairs;  // absent: by position
  std::vector<PairedCopy> transfers;
  bool has_transfers = false;
};

// An address: a JSON integer >= 0 or a string "0x..." (hex) or decimal digits.
std::int64_t read_address(const nlohmann::json& v, const std::string& file, const std::string& path);
// A non-negative (positive when `positive`) JSON integer.
std::int64_t read_count(const nlohmann::json& v, const std::string& file, const std::string& path, bool positive);

// @pre plan is an object with form "descriptors". Reads regions, lists, pairs and transfers; checks their
// shapes (pairs inside the lists, list lengths equal when paired by position, a region's tensor and instance
// declared by its side), not what they address.
DescriptorPlan read_descriptor_plan(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                    const nlohmann::json& plan, const std::string& file);

// The plan's `tables` member applied to identity tables of each side: {"source.block_table": [...],
// "target.page_table": [...]}. A name for a table the side lacks, a wrong length, an entry outside the
// range or a repeated entry is a SpecError at /tables/NAME.
void read_tables(const layout::BoundLayout& source, const layout::BoundLayout& target, const nlohmann::json& plan,
                 const std::string& file, layout::BlockTables& source_tables, layout::BlockTables& target_tables);

// The plan's `scope`, bound against TARGET; nullptr when absent (every position TARGET holds).
expr::Expr read_scope(const layout::BoundLayout& target, const nlohmann::json& plan, const std::string& file);

// Throws SpecError unless every member of `object` is in `allowed`.
void allow_only(const nlohmann::json& object, const std::vector<std::string>& allowed, const std::string& file,
                const std::string& path);

}  // namespace kvlayout::check

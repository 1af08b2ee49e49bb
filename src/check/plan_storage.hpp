#pragma once
// One side's storage as a single byte line: tensor t's instance i starts at first[t] + i * instance_bytes[t].
// Plan records and the expected move are compared on these lines, so an interval never straddles two
// instances unless the plan itself runs past one (which relocation reports as OUT_OF_BOUNDS first).
#include <cstdint>
#include <vector>

#include "check/plan_json.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

struct StorageLine {
  std::int64_t element_bytes = 1;
  std::vector<std::int64_t> first;           // per tensor
  std::vector<std::int64_t> instance_bytes;  // per tensor: its allocation, in bytes
  std::int64_t total = 0;
};

// @pre bound.fits() (so every size fits in int64: view_algebra's check_storage_fits)
StorageLine storage_line(const layout::BoundLayout& bound);

// A byte of the line, back to (tensor, instance, byte within the instance). @pre 0 <= at < line.total
struct StorageByte {
  int tensor = 0;
  std::int64_t instance = 0;
  std::int64_t byte = 0;
};
StorageByte storage_byte(const StorageLine& line, std::int64_t at);

// Where a descriptor's bytes [addr, addr + len) lie on the line, or why they lie nowhere.
struct Relocated {
  bool ok = false;
  std::int64_t at = 0;     // when ok
  std::string why;         // when not: "in no registered region" / "runs 12 bytes past region /x/0" / ...
  int region = -1;         // the region holding addr, if any
};

// @pre regions are disjoint (read_descriptor_plan checked). The region holding addr must hold the whole
// descriptor, and the descriptor must lie inside the instance's allocation (a region may be declared
// longer than its tensor).
Relocated relocate(const std::vector<Region>& sorted_regions, const StorageLine& line, std::int64_t addr,
                   std::int64_t len);

// The regions sorted by base (for relocate).
std::vector<Region> sorted_by_base(std::vector<Region> regions);

}  // namespace kvlayout::check

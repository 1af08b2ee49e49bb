#pragma once
// The small JSON helpers every reader of the concrete plan forms shares (plan_json.cpp, plan_regions.cpp,
// plan_descriptor_lists.cpp, plan_json_values.cpp, plan_json_tables.cpp): a SpecError naming the JSON path,
// a member lookup, and checked 64-bit arithmetic as a yes/no. Internal to src/check.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "check/plan_json.hpp"
#include "expr/arithmetic.hpp"
#include "spec/error.hpp"

namespace kvlayout::check::plan_json_util {

inline std::string short_json(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

[[noreturn]] inline void fail(const std::string& file, const std::string& path, const nlohmann::json& found,
                              const std::string& expected) {
  throw spec::SpecError(file, path, short_json(found), expected);
}

// expr's checked arithmetic, as a yes/no: whether a op b fits in 64 bits.
inline bool fits_add(std::int64_t a, std::int64_t b, std::int64_t& out) {
  try {
    out = expr::checked_add(a, b);
    return true;
  } catch (const expr::ArithmeticError&) {
    return false;
  }
}
inline bool fits_mul(std::int64_t a, std::int64_t b, std::int64_t& out) {
  try {
    out = expr::checked_mul(a, b);
    return true;
  } catch (const expr::ArithmeticError&) {
    return false;
  }
}

inline const nlohmann::json* member(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

// Phase readers of read_descriptor_plan, one file each.
// The regions of one side (plan_regions.cpp); each names a tensor and instance of that side's layout.
std::vector<Region> read_regions(const layout::BoundLayout& b, const nlohmann::json& plan, const char* key, const std::string& file);
// One side's list (plan_descriptor_lists.cpp), from `<side>_descriptors` or `<side>_runs` (exactly one).
std::optional<DescriptorList> read_list(const nlohmann::json& plan, const std::string& side, const std::string& file);

}  // namespace kvlayout::check::plan_json_util

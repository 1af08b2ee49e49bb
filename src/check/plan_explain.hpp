#pragma once
// Turning a finding of the plan comparison into a counterexample: which logical position a line byte holds
// on either side (from the expected move where it lies in one, else check::stored_at), each re-checked
// with layout::locate before it is shown (a counterexample that does not reproduce is an internal error,
// std::logic_error).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "check/expected_move.hpp"
#include "check/plan_storage.hpp"
#include "check/result.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

// Everything a plan is checked against, once read.
struct PlanSetting {
  const layout::BoundLayout& source;
  const layout::BoundLayout& target;
  layout::BlockTables source_tables, target_tables;
  expr::Expr scope;  // nullptr: every position TARGET holds
  StorageLine source_line, target_line;
  prove::ProveOptions options;
};

// What a line byte holds.
struct ByteContent {
  enum class Kind { Position, Padding, Unknown } kind = Kind::Unknown;
  std::vector<std::int64_t> coord;  // Position
  layout::Location location;        // Position: locate(...) at coord, re-checked to hold the byte
  std::int64_t byte_in_element = 0;
  StorageByte at;                   // tensor, instance, byte
  std::string detail;
};

// @pre 0 <= byte < line.total of that side.
ByteContent target_content(const PlanSetting& s, const ExpectedMove& move, std::int64_t byte);
ByteContent source_content(const PlanSetting& s, const ExpectedMove& move, std::int64_t byte);

// JSON and one line of text for a byte's content on a side.
nlohmann::json content_json(const layout::BoundLayout& bound, const ByteContent& c);
std::string content_text(const layout::BoundLayout& bound, const ByteContent& c);

// The line byte of a held location. @pre loc.placement == Held
std::int64_t line_byte(const StorageLine& line, const layout::BoundLayout& bound, const layout::Location& loc);

std::string hex(std::int64_t address);

}  // namespace kvlayout::check

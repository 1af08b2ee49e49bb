#include "check/plan_explain.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "check/plan_scope.hpp"
#include "check/stored_at.hpp"
#include "layout/address.hpp"

namespace kvlayout::check {
namespace {

// @post the content is a held position whose element holds `byte`, or std::logic_error.
void recheck(const layout::BoundLayout& b, const StorageLine& line, const layout::BlockTables& tables,
             std::int64_t byte, ByteContent& c) {
  c.location = layout::locate(b, c.coord, tables);
  if (c.location.placement != layout::Placement::Held)
    throw std::logic_error("plan check: counterexample position " + layout::format_coordinate(b, c.coord) +
                           " is not held by " + b.layout->name + " (does not reproduce)");
  const std::int64_t first = line_byte(line, b, c.location);
  if (byte < first || byte >= first + line.element_bytes)
    throw std::logic_error("plan check: " + layout::format_coordinate(b, c.coord) + " of " + b.layout->name +
                           " does not hold line byte " + std::to_string(byte) + " (does not reproduce)");
  c.byte_in_element = byte - first;
}

// A byte no expected run explains: asked of the solver with the tables fixed (check::stored_at).
ByteContent by_solver(const layout::BoundLayout& b, const StorageLine& line, const layout::BlockTables& tables,
                      const prove::ProveOptions& options, std::int64_t byte) {
  ByteContent c;
  c.at = storage_byte(line, byte);
  const StoredAt s = stored_at(b, tables, c.at.tensor, c.at.instance, c.at.byte / line.element_bytes, options);
  switch (s.kind) {
    case StoredAt::Kind::Position:
      c.kind = ByteContent::Kind::Position;
      c.coord = s.coord;
      recheck(b, line, tables, byte, c);
      break;
    case StoredAt::Kind::Padding: c.kind = ByteContent::Kind::Padding; break;
    case StoredAt::Kind::PastAllocation:
      throw std::logic_error("plan check: line byte " + std::to_string(byte) + " past its allocation");
    case StoredAt::Kind::Unknown:
      c.kind = ByteContent::Kind::Unknown;
      c.detail = s.detail;
      break;
  }
  return c;
}

}  // namespace

std::string hex(std::int64_t address) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
  return buf;
}

std::int64_t line_byte(const StorageLine& line, const layout::BoundLayout& b, const layout::Location& loc) {
  (void)b;
  const auto t = static_cast<std::size_t>(loc.address.tensor);
  return line.first[t] + loc.address.instance * line.instance_bytes[t] + loc.address.offset * line.element_bytes;
}

ByteContent target_content(const PlanSetting& s, const ExpectedMove& move, std::int64_t byte) {
  const auto& runs = move.runs;
  auto it = std::upper_bound(runs.begin(), runs.end(), byte, [](std::int64_t x, const ExpectedRun& r) { return x < r.dst; });
  if (it != runs.begin() && byte < (it - 1)->dst + (it - 1)->bytes && !(it - 1)->slack) {
    const ExpectedRun& r = *(it - 1);
    ByteContent c;
    c.kind = ByteContent::Kind::Position;
    c.at = storage_byte(s.target_line, byte);
    c.coord = position_at(move, s.target, r, (byte - r.dst) / s.target_line.element_bytes);
    recheck(s.target, s.target_line, s.target_tables, byte, c);
    return c;
  }
  return by_solver(s.target, s.target_line, s.target_tables, s.options, byte);
}

ByteContent source_content(const PlanSetting& s, const ExpectedMove& move, std::int64_t byte) {
  // The expected runs map target to source; one scan finds a run reading this source byte.
  for (const ExpectedRun& r : move.runs)
    if (!r.slack && byte >= r.src && byte < r.src + r.bytes) {
      ByteContent c;
      c.kind = ByteContent::Kind::Position;
      c.at = storage_byte(s.source_line, byte);
      c.coord = position_at(move, s.source, r, (byte - r.src) / s.source_line.element_bytes);
      recheck(s.source, s.source_line, s.source_tables, byte, c);
      return c;
    }
  return by_solver(s.source, s.source_line, s.source_tables, s.options, byte);
}

nlohmann::json content_json(const layout::BoundLayout& b, const ByteContent& c) {
  nlohmann::json out;
  switch (c.kind) {
    case ByteContent::Kind::Position:
      out = position_json(b, c.coord, c.location);
      out["byte_in_element"] = c.byte_in_element;
      return out;
    case ByteContent::Kind::Padding: out["padding"] = true; break;
    case ByteContent::Kind::Unknown: out["unknown"] = c.detail.empty() ? "the solver gave no answer" : c.detail; break;
  }
  out["tensor"] = b.tensors[static_cast<std::size_t>(c.at.tensor)].name;
  out["instance"] = c.at.instance;
  out["byte"] = c.at.byte;
  return out;
}

std::string content_text(const layout::BoundLayout& b, const ByteContent& c) {
  const std::string where = b.tensors[static_cast<std::size_t>(c.at.tensor)].name + "[" + std::to_string(c.at.instance) +
                            "] byte " + std::to_string(c.at.byte);
  switch (c.kind) {
    case ByteContent::Kind::Position:
      return "byte " + std::to_string(c.byte_in_element) + " of " + position_text(b, c.coord, c.location);
    case ByteContent::Kind::Padding: return where + ", padding (no position of " + b.layout->name + " lives there)";
    case ByteContent::Kind::Unknown: return where + ", content unknown (" + c.detail + ")";
  }
  return where;
}

}  // namespace kvlayout::check

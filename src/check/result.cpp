#include "check/result.hpp"

#include <sstream>

#include "layout/address.hpp"

namespace kvlayout::check {

nlohmann::json position_json(const layout::BoundLayout& bound, std::span<const std::int64_t> coord,
                             const layout::Location& loc) {
  nlohmann::json position = nlohmann::json::object();
  for (std::size_t i = 0; i < coord.size() && i < bound.coord_names.size(); ++i) position[bound.coord_names[i]] = coord[i];
  nlohmann::json out = {{"position", position}, {"text", layout::format_coordinate(bound, coord)}};
  if (loc.placement == layout::Placement::NotHeld) {
    out["held"] = false;
    return out;
  }
  const auto& t = bound.tensors.at(static_cast<std::size_t>(loc.address.tensor));
  out["tensor"] = t.name;
  out["view"] = t.views.at(static_cast<std::size_t>(loc.address.view)).name;
  out["instance"] = loc.address.instance;
  out["index"] = loc.address.index;
  if (loc.placement == layout::Placement::OutOfBounds) {
    out["out_of_bounds"] = loc.violation;
  } else {
    out["element"] = loc.address.offset;
    out["byte"] = layout::byte_offset(bound, loc.address);
  }
  if (!loc.reads.empty()) {
    nlohmann::json tables = nlohmann::json::object();
    for (const auto& r : loc.reads)
      tables[bound.tables.at(static_cast<std::size_t>(r.table)).name][std::to_string(r.entry)] = r.value;
    out["tables"] = tables;
  }
  return out;
}

std::string position_text(const layout::BoundLayout& bound, std::span<const std::int64_t> coord,
                          const layout::Location& loc) {
  std::string out = layout::format_coordinate(bound, coord);
  if (loc.placement == layout::Placement::NotHeld) return out + " (not held)";
  const auto& t = bound.tensors.at(static_cast<std::size_t>(loc.address.tensor));
  out += " at " + t.name + "[" + std::to_string(loc.address.instance) + "]";
  if (loc.placement == layout::Placement::OutOfBounds) return out + " out of bounds: " + loc.violation;
  out += " element " + std::to_string(loc.address.offset) + " (byte " +
         std::to_string(layout::byte_offset(bound, loc.address)) + ")";
  for (const auto& r : loc.reads)
    out += ", " + bound.tables.at(static_cast<std::size_t>(r.table)).name + "[" + std::to_string(r.entry) +
           "] = " + std::to_string(r.value);
  return out;
}

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json out = {{"verdict", code(r.verdict)}, {"message", r.message}, {"counterexample", r.counterexample}};
  if (!r.details.empty()) out["details"] = r.details;
  if (!r.steps.empty() || !r.checked_descriptors) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"name", s.name}, {"status", s.status}, {"detail", s.detail}, {"ms", s.ms}});
    out["obligations"] = steps;
  }
  if (r.checked_descriptors || r.checked_bytes)
    out["checked"] = {{"descriptors", r.checked_descriptors.value_or(0)}, {"bytes", r.checked_bytes.value_or(0)}};
  out["ms"] = r.ms;
  return out;
}

std::string format_text(const CheckResult& r, const std::string& title) {
  std::ostringstream out;
  out << title << ": " << code(r.verdict) << "  " << r.message << "\n";
  for (const auto& d : r.details) out << "  " << d << "\n";
  for (const auto& s : r.steps) {
    std::string head = "  " + s.name;
    out << head << std::string(head.size() < 18 ? 18 - head.size() : 1, ' ') << s.status;
    if (!s.detail.empty()) out << "  " << s.detail;
    out << "\n";
  }
  if (r.checked_descriptors)
    out << "  checked " << *r.checked_descriptors << " descriptor(s), " << r.checked_bytes.value_or(0) << " byte(s)\n";
  return out.str();
}

}  // namespace kvlayout::check

#include "prove/report.hpp"

#include <cstdio>
#include <sstream>

#include "layout/convert.hpp"

namespace kvlayout::prove {
namespace {

std::string fixed(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ms);
  return buf;
}

std::string label(const ObligationResult& r) { return r.name + "(" + side_name(r.side) + ")"; }

// A group proof's instance label for an obligation of p (empty for a pair proof or a precondition).
std::string instance_of(const Proof& p, const ObligationResult& r) {
  for (std::size_t i = 0; i < p.obligations.size() && i < p.instances.size(); ++i)
    if (&p.obligations[i] == &r) return p.instances[i];
  return "";
}

spec::Json location_json(const layout::BoundLayout& bound, const std::optional<layout::Location>& loc) {
  if (!loc) return nullptr;
  if (loc->placement == layout::Placement::NotHeld) return spec::Json{{"held", false}};
  const auto& t = bound.tensors[static_cast<std::size_t>(loc->address.tensor)];
  spec::Json j = {{"tensor", t.name}, {"instance", loc->address.instance}, {"offset", loc->address.offset}};
  j["view"] = t.views[static_cast<std::size_t>(loc->address.view)].name;
  j["index"] = loc->address.index;
  if (loc->placement == layout::Placement::OutOfBounds) {
    j["in_bounds"] = false;
    j["violation"] = loc->violation;
  }
  return j;
}

const layout::BoundLayout& coord_layout(const Proof& p) {
  return p.source_bound->coord_names.empty() ? *p.target_bound : *p.source_bound;
}

spec::Json counterexample_json(const Proof& p, const ObligationResult& r) {
  if (!r.counterexample) return nullptr;
  const Counterexample& c = *r.counterexample;
  spec::Json j = {{"summary", c.summary}};
  spec::Json positions = spec::Json::array();
  // Coordinates of a side-specific counterexample are in that side's coordinate names.
  const layout::BoundLayout& names = r.side == Side::Target ? *p.target_bound : coord_layout(p);
  for (const auto& w : c.positions) {
    spec::Json coord = spec::Json::object();
    for (std::size_t i = 0; i < w.coord.size() && i < names.coord_names.size(); ++i) coord[names.coord_names[i]] = w.coord[i];
    spec::Json tables = spec::Json::object();
    for (const auto& [name, entries] : w.tables)
      for (const auto& [entry, value] : entries) tables[name][std::to_string(entry)] = value;
    positions.push_back({{"coord", coord}, {"tables", tables}, {"source", location_json(*p.source_bound, w.source)},
                         {"target", location_json(*p.target_bound, w.target)}});
  }
  j["positions"] = positions;
  if (c.value) {
    const ValueWitness& v = *c.value;
    j["value"] = {{"source_type", spec::dtype_name(v.source_type)},
                  {"target_type", spec::dtype_name(v.target_type)},
                  {"source_bits", layout::format_bits(v.source_type, v.source_bits)},
                  {"round_trip_bits", layout::format_bits(v.source_type, v.round_trip_bits)},
                  {"source_decimal", layout::format_decimal(v.source_type, v.source_bits)},
                  {"round_trip_decimal", layout::format_decimal(v.source_type, v.round_trip_bits)}};
  }
  if (c.element) {
    const auto& b = c.element->on_source ? *p.source_bound : *p.target_bound;
    j["element"] = {{"side", c.element->on_source ? "source" : "target"},
                    {"tensor", b.tensors[static_cast<std::size_t>(c.element->tensor)].name},
                    {"instance", c.element->instance},
                    {"offset", c.element->offset}};
  }
  if (c.count) j["count"] = *c.count;
  if (!c.details.empty()) j["details"] = c.details;
  return j;
}

}  // namespace

std::string format_location(const layout::BoundLayout& bound, const layout::Location& loc) {
  if (loc.placement == layout::Placement::NotHeld) return "not held";
  if (loc.address.tensor < 0 || static_cast<std::size_t>(loc.address.tensor) >= bound.tensors.size())
    return "OUT OF BOUNDS (" + loc.violation + ")";  // no tensor was reached (a witness built by hand)
  const auto& t = bound.tensors[static_cast<std::size_t>(loc.address.tensor)];
  std::string s = t.name + "[" + std::to_string(loc.address.instance) + "]";
  const auto& v = t.views[static_cast<std::size_t>(loc.address.view)];
  if (v.name != t.name) s += "." + v.name;
  // An index outside its axis leaves no meaningful element offset (see element_offset).
  if (loc.placement == layout::Placement::OutOfBounds && loc.address.index.size() < v.index.size())
    return s + " OUT OF BOUNDS (" + loc.violation + ")";
  bool inside_axes = true;
  for (std::size_t k = 0; k < loc.address.index.size(); ++k)
    inside_axes = inside_axes && loc.address.index[k] >= 0 && loc.address.index[k] < v.extents[k];
  if (inside_axes) s += " element " + std::to_string(loc.address.offset);
  if (loc.placement == layout::Placement::OutOfBounds) s += " OUT OF BOUNDS (" + loc.violation + ")";
  return s;
}

std::string format_text(const Proof& p) {
  std::ostringstream out;
  const std::string& S = p.source_layout->name;
  const std::string& T = p.target_layout->name;
  out << S << " -> " << T << " on " << p.cache.name << ": " << grade_name(p.grade);
  const ObligationResult* d = p.deciding();
  if (p.reason != Reason::Exact) out << "  [" << info(p.reason).code << (d ? ": " + label(*d) : "") << "]";
  out << "\n  " << info(p.reason).message << "\n";
  // In the order they ran: fits, the preconditions (defined), then the other obligations.
  std::vector<const ObligationResult*> all;
  for (const auto& r : p.obligations)
    if (r.name == "fits") all.push_back(&r);
  for (const auto& r : p.preconditions) all.push_back(&r);
  for (const auto& r : p.obligations)
    if (r.name != "fits") all.push_back(&r);
  for (const ObligationResult* each : all) {
    const ObligationResult& r = *each;
    if (r.status == Status::Proved) continue;
    out << "\n  " << label(r) << " " << status_name(r.status) << ": " << r.detail << "\n";
    if (!r.counterexample) continue;
    const Counterexample& c = *r.counterexample;
    const layout::BoundLayout& names = r.side == Side::Target ? *p.target_bound : coord_layout(p);
    for (const auto& w : c.positions) {
      out << "    " << layout::format_coordinate(names, w.coord) << "\n";
      if (w.source) out << "      " << S << ": " << format_location(*p.source_bound, *w.source) << "\n";
      if (w.target) out << "      " << T << ": " << format_location(*p.target_bound, *w.target) << "\n";
      for (const auto& [name, entries] : w.tables) {
        out << "      " << name << ":";
        for (const auto& [entry, value] : entries) out << " [" << entry << "] = " << value;
        out << "\n";
      }
    }
    if (c.value)
      out << "    value " << spec::dtype_name(c.value->source_type) << " " << layout::format_bits(c.value->source_type, c.value->source_bits)
          << " (" << layout::format_decimal(c.value->source_type, c.value->source_bits) << ") -> "
          << spec::dtype_name(c.value->target_type) << " -> "
          << layout::format_bits(c.value->source_type, c.value->round_trip_bits) << " ("
          << layout::format_decimal(c.value->source_type, c.value->round_trip_bits) << ")\n";
    for (const auto& line : c.details) out << "    " << line << "\n";
  }
  if (!p.unblocked_by.empty()) out << "\n  unblocked by: " << p.unblocked_by << "\n";
  out << "\n  obligations (" << p.queries << " solver queries, " << fixed(p.ms) << " ms):\n";
  for (const ObligationResult* each : all) {
    const ObligationResult& r = *each;
    char line[512];
    std::string instance = instance_of(p, r);
    std::snprintf(line, sizeof line, "    %-18s %-8s %8s ms  %s%s", label(r).c_str(), status_name(r.status).c_str(),
                  fixed(r.ms).c_str(), r.method.c_str(), instance.empty() ? "" : ("  [" + instance + "]").c_str());
    out << line << "\n";
  }
  for (const auto& s : p.skipped) out << "    " << s.name << "(" << side_name(s.side) << ") skipped: " << s.because << "\n";
  return out.str();
}

spec::Json to_json(const Proof& p) {
  spec::Json j;
  j["source"] = p.source_layout->name;
  j["target"] = p.target_layout->name;
  j["cache"] = p.cache.name;
  j["grade"] = grade_name(p.grade);
  j["reason"] = {{"code", info(p.reason).code}, {"message", info(p.reason).message}};
  j["unblocked_by"] = p.unblocked_by.empty() ? spec::Json(nullptr) : spec::Json(p.unblocked_by);
  auto results = [&](const std::vector<ObligationResult>& list) {
    spec::Json out = spec::Json::array();
    for (const auto& r : list) {
      spec::Json o = {{"name", r.name}, {"side", side_name(r.side)}, {"status", status_name(r.status)}, {"ms", r.ms},
                      {"method", r.method}, {"detail", r.detail}};
      if (r.status != Status::Proved) o["reason"] = info(r.reason).code;
      if (!p.instances.empty() && &list == &p.obligations) o["instance"] = instance_of(p, r);
      o["counterexample"] = counterexample_json(p, r);
      out.push_back(o);
    }
    return out;
  };
  j["preconditions"] = results(p.preconditions);
  j["obligations"] = results(p.obligations);
  spec::Json skipped = spec::Json::array();
  for (const auto& s : p.skipped) skipped.push_back({{"name", s.name}, {"side", side_name(s.side)}, {"because", s.because}});
  j["skipped"] = skipped;
  j["positions"] = {{"source", p.source_positions ? spec::Json(*p.source_positions) : spec::Json(nullptr)},
                    {"target", p.target_positions ? spec::Json(*p.target_positions) : spec::Json(nullptr)}};
  j["queries"] = p.queries;
  j["ms"] = p.ms;
  return j;
}

}  // namespace kvlayout::prove

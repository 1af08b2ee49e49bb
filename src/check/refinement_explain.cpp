// The refinement check's counterexamples in words and JSON: where ASSUMED and REAL put a position, and
// what REAL really stores at ASSUMED's address (check::stored_at under the counterexample's tables).
#include "check/refinement_steps.hpp"

#include "check/stored_at.hpp"
#include "layout/address.hpp"

namespace kvlayout::check::refinement {

// "kv_cache[0] element 16384".
std::string address_text(const layout::BoundLayout& b, const layout::Location& loc) {
  return b.tensors.at(static_cast<std::size_t>(loc.address.tensor)).name + "[" + std::to_string(loc.address.instance) +
         "] element " + std::to_string(loc.address.offset);
}

namespace {

// What REAL holds at ASSUMED's address: JSON, a clause for the message ("where REAL stores (...)") and a
// sentence for the details ("REAL stores (...) at kv_cache[0] element 16384").
struct Stored {
  nlohmann::json json;
  std::string clause;
  std::string sentence;
};

Stored explain_stored(const Pairing& p, const layout::BlockTables& tables, const layout::Location& at) {
  const int rt = p.tensor_map.at(static_cast<std::size_t>(at.address.tensor));
  const std::string addr = address_text(p.assumed, at);
  StoredAt s = stored_at(p.real, tables, rt, at.address.instance, at.address.offset, p.options);
  switch (s.kind) {
    case StoredAt::Kind::Position: {
      const std::string q = layout::format_coordinate(p.real, s.coord);
      return {position_json(p.real, s.coord, s.location), "where REAL stores " + q,
              "REAL stores " + position_text(p.real, s.coord, s.location)};
    }
    case StoredAt::Kind::Padding:
      return {{{"padding", true}}, "where REAL stores no position (padding)",
              "REAL stores no position at " + addr + " (padding, proved under these tables)"};
    case StoredAt::Kind::PastAllocation:
      return {{{"past_allocation", true}, {"detail", s.detail}}, "which lies past REAL's allocation (" + s.detail + ")",
              addr + " lies past REAL's allocation (" + s.detail + ")"};
    case StoredAt::Kind::Unknown: break;
  }
  return {{{"unknown", s.detail}}, "where what REAL stores is unknown (" + s.detail + ")",
          "what REAL stores at " + addr + " is unknown (" + s.detail + ")"};
}

}  // namespace

// Fills out's counterexample for a position ASSUMED holds: both locations and what REAL stores there.
void explain(const Pairing& p, const std::vector<std::int64_t>& x, const layout::BlockTables& real_tables,
             const layout::Location& la, const layout::Location& lr, const std::string& what, CheckResult& out) {
  out.counterexample = {{"assumed", position_json(p.assumed, x, la)}, {"real", position_json(p.real, x, lr)}};
  out.details.push_back("ASSUMED (" + p.assumed.layout->name + ") puts " + position_text(p.assumed, x, la));
  out.details.push_back(lr.placement == layout::Placement::NotHeld
                            ? "REAL (" + p.real.layout->name + ") does not hold " + layout::format_coordinate(p.real, x)
                            : "REAL (" + p.real.layout->name + ") puts " + position_text(p.real, x, lr));
  std::string where = layout::format_coordinate(p.assumed, x);
  // An index outside its axis or a table read outside its table leaves no address; an offset outside the
  // tensor does (the evaluator computed it), and stored_at says it lies past REAL's allocation.
  const auto& view = p.assumed.tensors.at(static_cast<std::size_t>(la.address.tensor)).views.at(
      static_cast<std::size_t>(la.address.view));
  bool has_offset = la.placement == layout::Placement::Held || la.address.index.size() == view.extents.size();
  for (std::size_t k = 0; k < la.address.index.size() && has_offset; ++k)
    has_offset = la.address.index[k] >= 0 && la.address.index[k] < view.extents[k];
  if (!has_offset) {
    out.counterexample["stored"] = {{"out_of_bounds", la.violation}};
    out.message = "ASSUMED's address of " + where + " leaves its range: " + la.violation;
    return;
  }
  const Stored stored = explain_stored(p, real_tables, la);
  out.counterexample["stored"] = stored.json;
  out.details.push_back(stored.sentence);
  out.message = "ASSUMED puts " + where + " at " + address_text(p.assumed, la) + ", " + stored.clause + what;
}

}  // namespace kvlayout::check::refinement

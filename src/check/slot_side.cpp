// Reading one side of a `slots` plan (slot_side.hpp): its ids, block size and table, checked against the
// side's layout.
#include "check/slot_side.hpp"

#include "check/plan_json.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"

namespace kvlayout::check::slot_map {
namespace {

int table_of(const layout::BoundLayout& b, const nlohmann::json& plan, const std::string& key, const std::string& file) {
  auto it = plan.find(key);
  if (it == plan.end()) {
    if (b.tables.size() == 1) return 0;
    throw spec::SpecError(file, "/" + key, "nothing", "the name of the block table of " + b.layout->name +
                                                          (b.tables.empty() ? " (it has none: the slots form needs one)" : ""));
  }
  if (it->is_string())
    for (std::size_t i = 0; i < b.tables.size(); ++i)
      if (b.tables[i].name == it->get<std::string>()) return static_cast<int>(i);
  std::string names;
  for (const auto& t : b.tables) names += (names.empty() ? "" : ", ") + t.name;
  throw spec::SpecError(file, "/" + key, it->dump(), "a table of " + b.layout->name + ": " + (names.empty() ? "(none)" : names));
}

}  // namespace

std::int64_t integer_member(const nlohmann::json& plan, const char* key, const std::string& file, bool required, std::int64_t fallback) {
  auto it = plan.find(key);
  if (it == plan.end()) {
    if (required) throw spec::SpecError(file, std::string("/") + key, "nothing", "a positive integer");
    return fallback;
  }
  return read_count(*it, file, std::string("/") + key, true);
}

SlotSide read_side(const layout::BoundLayout& b, const std::string& side, const nlohmann::json& plan, const std::string& file,
                   bool by_token, std::int64_t t0, std::int64_t t1, const std::vector<std::int64_t>& base) {
  SlotSide s;
  s.b = &b;
  s.side = side;
  s.by_token = by_token;
  s.t0 = t0;
  s.t1 = t1;
  s.base = base;
  s.member = side + (by_token ? "_slots" : "_blocks");
  const std::string own = side + "_block_size";
  s.block_size = plan.contains(own) ? integer_member(plan, own.c_str(), file, true, 0) : integer_member(plan, "block_size", file, true, 0);
  s.table = table_of(b, plan, side + "_table", file);
  auto it = plan.find(s.member);
  if (it == plan.end() || !it->is_array())
    throw spec::SpecError(file, "/" + s.member, it == plan.end() ? "nothing" : it->dump(), "an array of integer ids");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& v = (*it)[i];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw spec::SpecError(file, s.path(static_cast<std::int64_t>(i)), v.dump(), "an integer id");
    s.ids.push_back(v.get<std::int64_t>());
  }
  const auto& t = b.tables[static_cast<std::size_t>(s.table)];
  for (std::int64_t tok : {t0, t1 - 1}) {
    const auto loc = layout::locate(b, s.position(tok), layout::identity_tables(b));
    bool reads = false;
    for (const auto& r : loc.reads) reads = reads || (r.table == s.table && r.entry == tok / s.block_size);
    if (!reads)
      throw spec::SpecError(file, "/block_size", "block size " + std::to_string(s.block_size) + ": " + side + " " + b.layout->name +
                                                     " does not read " + t.name + "[" + std::to_string(tok / s.block_size) +
                                                     "] for token " + std::to_string(tok),
                            "the block size by which " + b.layout->name + " indexes " + t.name + " (e.g. " + side + "_block_size)");
  }
  return s;
}

}  // namespace kvlayout::check::slot_map

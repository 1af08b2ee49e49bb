#include "prove/group_report.hpp"

#include <sstream>

#include "prove/report.hpp"

namespace kvlayout::prove {
namespace {

std::string range_text(const std::string& what, const std::optional<RankRange>& r) {
  if (!r) return "";
  if (r->end - r->first == 1) return ", " + what + " " + std::to_string(r->first);
  return ", " + what + "s " + std::to_string(r->first) + ".." + std::to_string(r->end - 1);
}

// The linear rank of a member (its index: row-major over the rank axes), 0 for a whole layout.
std::int64_t rank_number(std::size_t member) { return static_cast<std::int64_t>(member); }

spec::Json group_json(const layout::Group& g) {
  spec::Json sizes = spec::Json::object();
  for (const auto& [name, value] : g.sizes) sizes[name] = value;
  spec::Json instances = spec::Json::array();
  for (std::size_t m = 0; m < g.members.size(); ++m)
    instances.push_back({{"rank", rank_number(m)}, {"ranks", ranks_json(g.members[m])}, {"layout", g.members[m].layout->name}});
  return {{"name", g.declaration->name}, {"family", g.is_family()}, {"sizes", sizes}, {"instances", instances}};
}

}  // namespace

spec::Json range_json(const std::optional<RankRange>& r) {
  if (!r) return nullptr;
  return spec::Json::array({r->first, r->end});
}

spec::Json ranks_json(const layout::GroupMember& m) {
  spec::Json out = spec::Json::object();
  for (const auto& [name, value] : m.rank) out[name] = value;
  return out;
}

std::string format_assignment(const GroupProof& g, const RankAssignment& a, const std::string& source_word,
                              const std::string& target_word) {
  std::string box = range_text("head", a.heads) + range_text("layer", a.layers);
  return g.target.who(a.target_member, target_word) + box + " <- " + g.source.who(a.source_member, source_word) + box;
}

std::string format_group_text(const GroupProof& g) {
  std::ostringstream out;
  const std::string text = format_text(g.proof);
  // The pair report's first line names the declarations; a group names its sizes too. The assignment
  // follows the grade's message, before the findings and the obligation table.
  const auto eol = text.find('\n');
  const auto on = text.find(" on ");
  const auto message_end = text.find('\n', eol + 1);
  out << g.source.title() << " -> " << g.target.title() << text.substr(on, eol - on) << text.substr(eol, message_end - eol) << "\n";
  out << "\n  groups: source " << g.source.members.size() << " instance(s), target " << g.target.members.size()
      << " instance(s)\n";
  if (!g.assignment.empty()) {
    out << "  assignment (" << g.assignment.size() << " rank pair(s) exchange data):\n";
    for (const auto& a : g.assignment) out << "    " << format_assignment(g, a) << "\n";
  }
  out << text.substr(message_end + 1);
  return out.str();
}

spec::Json group_to_json(const GroupProof& g) {
  spec::Json j = to_json(g.proof);
  j["source_group"] = group_json(g.source);
  j["target_group"] = group_json(g.target);
  spec::Json assignment = spec::Json::array();
  for (const auto& a : g.assignment)
    assignment.push_back({{"target_rank", rank_number(a.target_member)},
                          {"source_rank", rank_number(a.source_member)},
                          {"heads", range_json(a.heads)},
                          {"layers", range_json(a.layers)},
                          {"target_instance", g.target.members[a.target_member].layout->name},
                          {"source_instance", g.source.members[a.source_member].layout->name}});
  j["assignment"] = assignment;
  return j;
}

}  // namespace kvlayout::prove

#include "emit/group_pieces.hpp"

#include "prove/group_report.hpp"

namespace kvlayout::emit {

using prove::range_json;
using prove::ranks_json;

std::vector<GroupPiece> group_pieces(const prove::GroupProof& g) {
  std::vector<GroupPiece> out;
  out.reserve(g.assignment.size());
  for (std::size_t i = 0; i < g.assignment.size(); ++i) {
    const prove::RankAssignment& a = g.assignment[i];
    GroupPiece p;
    p.assignment = a;
    p.target_rank = static_cast<std::int64_t>(a.target_member);
    p.source_rank = static_cast<std::int64_t>(a.source_member);
    p.proof = g.pieces.at(i);
    out.push_back(std::move(p));
  }
  return out;
}

const GroupPiece* first_unlicensed(const std::vector<GroupPiece>& pieces, bool (*accept)(const prove::Proof&)) {
  for (const auto& p : pieces)
    if (p.proof.grade == prove::Grade::Unknown) return &p;
  for (const auto& p : pieces)
    if (!accept(p.proof)) return &p;
  return nullptr;
}

spec::Json piece_json(const prove::GroupProof& g, const GroupPiece& p) {
  const auto& a = p.assignment;
  return {{"target_rank", p.target_rank},
          {"source_rank", p.source_rank},
          {"target_ranks", ranks_json(g.target.members.at(a.target_member))},
          {"source_ranks", ranks_json(g.source.members.at(a.source_member))},
          {"heads", range_json(a.heads)},
          {"layers", range_json(a.layers)},
          {"source_layout", g.source.members.at(a.source_member).layout->name},
          {"target_layout", g.target.members.at(a.target_member).layout->name},
          {"piece", p.proof.target_layout->name},
          {"grade", prove::grade_name(p.proof.grade)}};
}

spec::Json group_summary_json(const layout::Group& g) {
  spec::Json sizes = spec::Json::object();
  for (const auto& [name, value] : g.sizes) sizes[name] = value;
  return {{"name", g.declaration->name}, {"family", g.is_family()}, {"sizes", sizes},
          {"instances", static_cast<std::int64_t>(g.members.size())}};
}

}  // namespace kvlayout::emit

#include "emit/group_pieces.hpp"

namespace kvlayout::emit {
namespace {

spec::Json range_json(const std::optional<prove::RankRange>& r) {
  if (!r) return nullptr;
  return spec::Json::array({r->first, r->end});
}

spec::Json ranks_json(const layout::GroupMember& m) {
  spec::Json out = spec::Json::object();
  for (const auto& [name, value] : m.rank) out[name] = value;
  return out;
}

}  // namespace

std::vector<GroupPiece> prove_group_pieces(const prove::GroupProof& g, const spec::CacheShape& cache,
                                           const prove::ProveOptions& options, const layout::Overrides& overrides) {
  std::vector<GroupPiece> out;
  out.reserve(g.assignment.size());
  for (const prove::RankAssignment& a : g.assignment) {
    GroupPiece p;
    p.assignment = a;
    p.target_rank = static_cast<std::int64_t>(a.target_member);
    p.source_rank = static_cast<std::int64_t>(a.source_member);
    p.proof = prove::prove(g.source.members.at(a.source_member).layout, prove::assigned_piece(g.source, g.target, a), cache,
                           options, overrides);
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

#pragma once
// The rank pairs of a group translation that exchange data (prove/group.hpp), each proven as a normal pair:
// the source instance's layout -> the target instance's declaration restricted to the box it is assigned
// (prove::assigned_piece). What kvlayout emit (one kernel per piece) and plan emit (one plan per piece)
// work from.
#include <cstdint>
#include <string>
#include <vector>

#include "prove/group.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::emit {

struct GroupPiece {
  prove::RankAssignment assignment;
  std::int64_t target_rank = 0, source_rank = 0;  // the members' linear ranks (row-major over the rank axes)
  prove::Proof proof;                             // source member -> assigned piece
};

// One piece per assignment entry, in the assignment's order, with the pair proof prove_group made of it.
std::vector<GroupPiece> group_pieces(const prove::GroupProof& g);

// The worst piece grade as the CLI reads it: the first piece that is UNKNOWN, else the first one `accept`
// refuses, else nullptr.
const GroupPiece* first_unlicensed(const std::vector<GroupPiece>& pieces, bool (*accept)(const prove::Proof&));

// {"target_rank", "source_rank", "target_ranks": {"tp_rank": 1}, "source_ranks", "heads": [first, end] | null,
//  "layers": [first, end] | null, "source_layout", "target_layout", "piece", "grade"}
spec::Json piece_json(const prove::GroupProof& g, const GroupPiece& p);

// {"name", "family", "sizes"} of a group.
spec::Json group_summary_json(const layout::Group& g);

}  // namespace kvlayout::emit

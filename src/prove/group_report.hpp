#pragma once
// A group proof as text and JSON: the pair report (report.hpp) with each obligation's instance, the
// groups' sizes and the assignment ("target rank 1, heads 4..7 <- source rank 0").
#include <string>

#include "prove/group.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::prove {

std::string format_group_text(const GroupProof& g);
// [first, end] of a head or layer range, or null (no such axis).
spec::Json range_json(const std::optional<RankRange>& r);
// A member's rank values: {"tp_rank": 1, ...} ({} for a whole layout).
spec::Json ranks_json(const layout::GroupMember& m);
// to_json(proof) plus "source_group"/"target_group" ({"name", "sizes", "instances"}), an "instance" per
// obligation, and "assignment": [{"target_rank", "source_rank", "heads": [first, end], "layers": [first,
// end], "target_instance", "source_instance"}] (heads/layers null when the content has no such axis).
spec::Json group_to_json(const GroupProof& g);

}  // namespace kvlayout::prove

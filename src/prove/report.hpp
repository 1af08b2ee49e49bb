#pragma once
// A proof as text (named coordinates, Alive2-style banners) and as JSON (the documented contract:
// {"source","target","cache","grade","reason":{"code","message"},"unblocked_by","obligations":[...]}).
#include <string>

#include "prove/proof.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::prove {

std::string format_text(const Proof& proof);
spec::Json to_json(const Proof& proof);

// "kv_cache[1] element 3557" / "not held" / "OUT OF BOUNDS: ..." for one side of a position.
std::string format_location(const layout::BoundLayout& bound, const layout::Location& loc);

}  // namespace kvlayout::prove

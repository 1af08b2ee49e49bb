#pragma once
// The counterexample a row records: the deciding obligation's (from the proof's JSON report), named by
// its obligation, or null when the grade is exact. Shared by the grid's rows and the group rows.
#include "prove/proof.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::certificate {

spec::Json deciding_counterexample(const prove::Proof& p);

}  // namespace kvlayout::certificate

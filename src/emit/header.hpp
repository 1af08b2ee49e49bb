#pragma once
// The comment a generated kernel starts with: what was proven (pair, spec hashes, cache shape, grade,
// reasons, tool version), the plan, and the C ABI with the meaning of every pointer.
#include <string>

#include "emit/emit.hpp"
#include "emit/plan.hpp"

namespace kvlayout::emit {

std::string header_comment(const prove::Proof& proof, const Plan& plan, const EmitOptions& options);

// Number of tensor instances (pointers) a side takes, and of its tables.
std::int64_t instance_count(const layout::BoundLayout& b);

}  // namespace kvlayout::emit

#pragma once
// The CPU printers: the planned kernel (std::thread across the two outermost loops) and a naive reference
// that decodes every position with div/mod and evaluates both address functions per element.
#include <string>
#include <vector>

#include "emit/emit.hpp"
#include "emit/plan.hpp"

namespace kvlayout::emit {

std::string cpu_kernel(const prove::Proof& proof, const Plan& plan, const EmitOptions& options);
std::string cpu_naive_kernel(const prove::Proof& proof, const Plan& plan, const EmitOptions& options);

// The entry checks every kernel makes before writing anything, as statements returning the documented
// error codes: null pointers and num_tokens (host side) ...
std::vector<std::string> pointer_checks(const prove::Proof& proof, const Plan& plan);
// ... and, per token moved, every table entry the move reads: inside its table, within its range. The
// statements read `token` and the arrays named src_tables / dst_tables, and run `fail` on a bad entry.
std::vector<std::string> table_checks(const prove::Proof& proof, const Plan& plan, const std::string& fail);

}  // namespace kvlayout::emit

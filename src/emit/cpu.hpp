#pragma once
// The CPU printers: the planned kernel (std::thread across the two outermost loops) and a naive reference
// that decodes every position with div/mod and evaluates both address functions per element.
#include <cstdint>
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

// ... and that the entries read hold distinct blocks: the proof holds for injective tables, so two entries
// of one table naming one block make the move wrong (two blocks' tokens land on one, or one is read
// twice), not only unsafe. One check per table the move reads; entries are C expressions over `token`
// and the arrays src_tables / dst_tables, each inside the table (table_checks runs first).
struct DistinctCheck {
  std::string table;                 // "src_tables[0]"
  std::int64_t first = 0, end = 0;   // the table's range: blocks lie in [first, end)
  std::vector<std::string> entries;  // the entries the move reads, one expression per read
};
std::vector<DistinctCheck> distinct_checks(const prove::Proof& proof, const Plan& plan);

// The documented return codes of every emitted kernel.
inline constexpr int kBadTokenCount = 1, kEntryOutOfRange = 2, kNullPointer = 3, kCudaError = 4, kRepeatedBlock = 5;

}  // namespace kvlayout::emit

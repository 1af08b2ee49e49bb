#pragma once
// The statements of a cell's loop nest that the CPU and CUDA printers share: at each loop level, what
// becomes known there (bound-checked coordinates, tensor-instance pointers, table lookups) and the
// running element offsets of both sides. Everything is computed at the outermost level where all it reads
// is bound, so lookups sit outside the loops that do not change them.
#include <string>
#include <vector>

#include "emit/plan.hpp"

namespace kvlayout::emit {

// How the printed code names its inputs.
struct Inputs {
  std::string src;         // array of source instance pointers (char* const*)
  std::string dst;
  std::string src_tables;  // array of source table pointers (const int32_t* const*)
  std::string dst_tables;
  std::string num_tokens;
};

// Statements for `level` (-1: before the first loop); `skip` leaves the current iteration ("continue;",
// or "return;" before any loop).
std::vector<std::string> level_statements(const Cell& cell, int level, const Inputs& in, const std::string& skip);

// The element offset of a side once every loop is bound.
std::string final_offset(const Cell& cell, bool source);
// The source / target instance pointer variable.
std::string pointer_name(bool source);
// A loop's extent as an expression (the token's top digit depends on num_tokens).
std::string extent(const Cell& cell, int mode, const Inputs& in);

}  // namespace kvlayout::emit

#pragma once
// Relayout kernels from a proven translation: self-contained C++17 (CPU, std::thread) or CUDA C++,
// printed from the move plan and carrying the proof's facts in their header.
#include <cstdint>
#include <string>

#include "prove/proof.hpp"

namespace kvlayout::emit {

enum class Target { Cpu, Cuda };

struct EmitOptions {
  Target target = Target::Cpu;
  std::string name = "kvlayout_relayout";  // the exported C function
  bool allow_not_exact = false;            // emit a NOT_EXACT move (with its element conversion)
  bool naive = false;                      // a per-element reference loop (div/mod per element), for comparison
  // CPU: moves of at least this many target bytes use streaming stores (they pay off only for moves much
  // larger than the caches). Tests lower it to run the streaming paths on the small cache.
  std::int64_t streaming_from_bytes = std::int64_t{4} << 20;
};

// Whether `grade` may be emitted: EXACT_BYTE, EXACT_TOKEN, SUBSET; NOT_EXACT only when allowed.
bool emittable(prove::Grade grade, bool allow_not_exact);

// @pre emittable(proof.grade, options.allow_not_exact). Throws EmitError for a pair the generator cannot
// express, SpecError for a function name that is not a C identifier.
std::string emit_kernel(const prove::Proof& proof, const EmitOptions& options);

}  // namespace kvlayout::emit

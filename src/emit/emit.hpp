#pragma once
// Relayout kernels from a proven translation: self-contained C++17 (CPU, std::thread) or CUDA C++,
// printed from the move plan and carrying the proof's facts in their header.
#include <cstdint>
#include <stdexcept>
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

// The generator's own refusal: a proof that does not license the move (not emittable, or a grade its
// obligations do not support).
struct NotEmittable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Emits only what the proof licenses, whatever calls it: the grade must be emittable and must be what
// the proof's own obligations give (prove::grade_of), and every obligation an exact move relies on —
// fits, defined, in-bounds and injective on both sides, and covers — must be present and proved
// (an obligation switched off for a test, or a hand-built Proof, is refused).
// Throws NotEmittable for a proof that does not, EmitError for a pair the generator cannot express,
// SpecError for a function name that is not a C identifier.
std::string emit_kernel(const prove::Proof& proof, const EmitOptions& options);

}  // namespace kvlayout::emit

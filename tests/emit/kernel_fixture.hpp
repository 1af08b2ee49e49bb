#pragma once
// Running emitted kernels: compile generated sources into a shared library, load it, and check a kernel
// against the enumeration's byte oracle.
#include <cstdint>
#include <string>
#include <vector>

#include "enumerate/cross_check.hpp"

namespace kvlayout::test {

using Kernel = int (*)(void* const*, void* const*, const std::int32_t* const*, const std::int32_t* const*, std::int64_t, int);

// Compiles `sources` (each a complete translation unit) into shared libraries, two compilers at a time,
// and loads them. Throws with the compiler's output on failure.
class KernelLibrary {
 public:
  KernelLibrary(const std::vector<std::string>& sources, const std::string& directory);
  ~KernelLibrary();
  Kernel find(const std::string& name) const;

 private:
  std::vector<void*> handles_;
};

struct KernelRun {
  int code = -1;
  std::int64_t moved = 0;        // positions the oracle moved
  std::int64_t wrong_bytes = 0;  // destination bytes that differ from the oracle's
};

// Fills the source with data everywhere, poisons the destination, runs `kernel` and the oracle under table
// choice k, and compares every destination byte.
KernelRun run_against_oracle(Kernel kernel, const enumerate::Enumerated& source, const enumerate::Enumerated& target,
                             std::size_t k, std::int64_t num_tokens, int threads);

// int32 copies of a side's tables under choice k, and the pointer arrays the ABI takes.
std::vector<std::vector<std::int32_t>> int32_tables(const enumerate::Enumerated& e, std::size_t k);

}  // namespace kvlayout::test

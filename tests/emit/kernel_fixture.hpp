#pragma once
// Running emitted kernels: compile generated sources into a shared library, load it, and check a kernel
// against the enumeration's byte oracle.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "enumerate/cross_check.hpp"
#include "native/kernel_library.hpp"

namespace kvlayout::test {

using Kernel = native::RelayoutKernel;

// Emitted kernels compiled unoptimised (quick to build) with -Wall -Wextra -Werror: a warning in generated code is a
// generator bug.
class KernelLibrary : public native::KernelLibrary {
 public:
  KernelLibrary(const std::vector<std::string>& sources, const std::string& directory)
      : native::KernelLibrary(sources, directory, native::CompileOptions{"", {"-O0"}, 2, true}) {}
};

// The instruction-set variants an emitted CPU kernel carries that this CPU runs: "baseline" always, "avx2"
// when the CPU has it, "avx512" (the AVX2 variant with its AVX-512 transposes) when it has AVX-512 F and
// BW too. Tests run each kernel under every one.
std::vector<std::string> isa_variants();
// Test one ordered pair of layouts in this many (certificate::in_sample_pair): $KVLAYOUT_TEST_PAIR_SAMPLE when
// it is above 1, else 1 (every pair).
std::size_t pair_sample();

// Selects the variant kernels called in this scope run (KVLAYOUT_ISA, read by the kernel at each call), and
// sets every per-CPU choice (emit/cpu_choices.hpp, by its test switch), so that every kernel runs against
// the byte oracle both ways on any CPU: the prefetches on for the baseline, off for AVX2 (a prefetch changes
// no byte, but its address arithmetic is emitted code too); the staged bursts, rows and boxes off for the
// baseline, on for AVX2, or as `staged` says; the nests' second loop orders (Cell::cpu_loops), a paged
// source's blocks in the order of their table entries and the paired runs' four-by-four nests off for the
// baseline, on for AVX2, or as `second_orders` says; whole blocks of under two pages four at a time off for
// the baseline, on for AVX2, or as `blocks_at_once` says.
class ScopedIsa {
 public:
  explicit ScopedIsa(const std::string& variant);
  ScopedIsa(const std::string& variant, bool staged);
  ScopedIsa(const std::string& variant, bool staged, bool second_orders);
  ScopedIsa(const std::string& variant, bool staged, bool second_orders, bool blocks_at_once);
  ~ScopedIsa();
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;
};

struct KernelRun {
  int code = -1;
  std::int64_t moved = 0;        // positions the oracle moved
  std::int64_t wrong_bytes = 0;  // destination bytes that differ from the oracle's
};

// Which end of a fenced span (Fenced) meets the unreadable page.
enum class FenceAt {
  end,    // the span ends where the page begins: reads or writes past its last byte fault
  start,  // the span begins where the page ends: reads or writes before its first byte fault
};

// Where run_against_oracle places the buffers and tables it passes.
struct Placement {
  // With `target_shift` > 0 each target buffer is a copy placed `target_shift` bytes past the first source
  // buffer's address modulo 4 KiB (16-byte aligned shifts keep the ABI's alignment): the placement of
  // np.empty's arrays, where a copy that runs forward meets 4 KiB aliasing. With `shift_past_page`, each
  // is placed `target_shift` bytes past a page instead (off a line, whatever the source's placement).
  // Shifted targets are not fenced (the shift fixes their start modulo the page).
  std::size_t target_shift = 0;
  bool shift_past_page = false;
  // Which end of every table, source buffer and unshifted target buffer is fenced; unset: the end under
  // table choices 0 and 2, the start under choice 1, so that a test looping over the choices meets both.
  std::optional<FenceAt> fence;

  static Placement shifted(std::size_t shift) { return Placement{shift, false, std::nullopt}; }
  static Placement shifted_past_page(std::size_t shift) { return Placement{shift, true, std::nullopt}; }
  static Placement fenced_at(FenceAt at) { return Placement{0, false, at}; }
};

// Fills the source with data everywhere, poisons the destination, runs `kernel` and the oracle under table
// choice k, and compares every destination byte. Every table, source buffer and (unshifted) target buffer
// is passed fenced (Fenced): a kernel that reads or writes outside them dies of SIGSEGV.
KernelRun run_against_oracle(Kernel kernel, const enumerate::Enumerated& source, const enumerate::Enumerated& target,
                             std::size_t k, std::int64_t num_tokens, int threads, const Placement& placement = {});

// int32 copies of a side's tables under choice k, and the pointer arrays the ABI takes.
std::vector<std::vector<std::int32_t>> int32_tables(const enumerate::Enumerated& e, std::size_t k);

// Copies of byte spans, each placed against an unreadable, unwritable page: with FenceAt::end it ends where
// the page begins (its start rounded down to `align` bytes, so at most align - 1 bytes lie between its end
// and the page); with FenceAt::start it begins where the page ends (page-aligned). A kernel that reads or
// writes past that end dies of SIGSEGV instead of touching whatever lies there unseen (the byte oracle sees
// only the buffers' own bytes). The copies are writable: a fenced target is read back from them.
class Fenced {
 public:
  Fenced(const std::vector<std::pair<const void*, std::size_t>>& spans, std::size_t align, FenceAt at = FenceAt::end);
  ~Fenced();
  Fenced(const Fenced&) = delete;
  Fenced& operator=(const Fenced&) = delete;
  // The copies' first bytes, in the spans' order.
  const std::vector<void*>& pointers() const { return pointers_; }

 private:
  struct Mapping {
    void* base;
    std::size_t bytes;
  };
  std::vector<Mapping> mappings_;
  std::vector<void*> pointers_;
};

// int32 tables fenced (Fenced, align 4), with the pointer array the kernels' `st` / `dt` take.
class FencedTables {
 public:
  FencedTables(const std::vector<std::vector<std::int32_t>>& tables, FenceAt at);
  // The tables' first entries (empty for no tables).
  const std::vector<const std::int32_t*>& pointers() const { return pointers_; }

 private:
  Fenced copies_;
  std::vector<const std::int32_t*> pointers_;
};

}  // namespace kvlayout::test

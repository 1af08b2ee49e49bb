#pragma once
// The order in which a compiled kernel issues its streaming (non-temporal) stores, read from the compiler's
// x86-64 assembly (AT&T syntax, as GCC and clang write it with -S).
//
// Why: a write-combining buffer holds one 64-byte line; a line whose stores are split by another line's
// leaves two buffers half full, and on the Xeon measured here that cost up to 1.25x on whole kernels. C++
// does not order stores to different addresses, so the generator cannot: GCC interleaved two lines'
// 32-byte halves (k + 32, k + 64, k, k + 96) depending on code elsewhere in the function. The emitted
// kv_line_stored() barrier keeps each line's stores together; this reader is how a test or the sweep sees
// that the compiler honoured it.
#include <cstdint>
#include <string>
#include <vector>

namespace kvlayout::native {

// Consecutive streaming stores to one base register: `vmovntdq`, `movntdq`, `vmovntps` and `movntps` from
// an xmm, ymm or zmm register, in the order issued. A group runs on through loads, address arithmetic and
// other stores to the same base; it ends at a label, a jump, a call, any other instruction, or a store to
// another base.
struct StreamingStoreGroup {
  std::string function;               // the enclosing function's (mangled) label
  std::string base;                   // the base register, e.g. "%rax"
  std::vector<std::int64_t> offsets;  // each store's displacement from the base, in issue order
  std::vector<int> widths;            // each store's bytes: 16, 32 or 64
};

// Every group of two or more stores in `assembly`.
std::vector<StreamingStoreGroup> streaming_store_groups(const std::string& assembly);

// True when a 64-byte line's stores are split by another line's: some line recurs in the group after a
// store to a different line. Lines are counted from the base register, which the kernels' streaming paths
// keep on a line where their target starts on one. Two halves of one line stored high half first are
// not split (the line is still whole before the next begins).
bool splits_lines(const StreamingStoreGroup& group);

// The generated kernel a function belongs to: NAME in its `kvlayout_generated_NAME` namespace (each
// emitted kernel's code lives in one), or "" for a function outside every kernel.
std::string generated_kernel_of(const std::string& function_label);

}  // namespace kvlayout::native

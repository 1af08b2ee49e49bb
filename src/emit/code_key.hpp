#pragma once
// What makes an emitted kernel the function it is, for compiling or timing one kernel once when several
// pairs emit it (proven-equal declarations emit the same code).
#include <string>
#include <vector>

#include "emit/cpu_choices.hpp"

namespace kvlayout::emit {

// The kernel's source after its leading comment block (the proof record, which names the pair) with its
// exported name `name` replaced by a mark no source contains. Two kernels with one key are the same code
// under two names.
std::string kernel_code_key(const std::string& source, const std::string& name);

// The SHA-256 of kernel_code_key without its comment lines and blank lines, so that two sweeps can tell a
// kernel whose code changed from one whose comments did (kvlayout_bench_sweep's --against). The per-CPU
// choices (cpu_choices.hpp) every CPU kernel declares are left out, and each choice the kernel reads is
// named with its values instead: adding a choice, or changing one's values, changes the digest of exactly
// the kernels that read it.
// `choices`: the table the kernel was emitted with (the tests' control: another table).
std::string kernel_code_digest(const std::string& source, const std::string& name);
std::string kernel_code_digest(const std::string& source, const std::string& name, const std::vector<CpuChoice>& choices);

}  // namespace kvlayout::emit

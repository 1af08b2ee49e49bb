#pragma once
// Emitted CPU kernels made callable in this process: each source (a complete translation unit from
// emit::emit_kernel) is compiled with the system compiler into a shared object and loaded with dlopen.
// Used by the benchmarks, the tests that run kernels against the byte oracle, and callers that want a
// kernel without a build system of their own.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvlayout::native {

// The C ABI of every emitted relayout kernel (see emit/header.cpp).
using RelayoutKernel = int (*)(void* const* src, void* const* dst, const std::int32_t* const* src_tables,
                               const std::int32_t* const* dst_tables, std::int64_t num_tokens, int num_threads);

struct CompileOptions {
  std::string compiler;                        // empty: $CXX, else "c++"
  std::vector<std::string> flags = {"-O2"};    // besides -std=c++17 -fPIC -shared -pthread
  int jobs = 2;                                // compilers run at once
  bool warnings_are_errors = false;            // -Wall -Werror (the tests hold generated code to it)
};

// A compiler failure: the message holds the command and the compiler's first 4000 characters of output.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class KernelLibrary {
 public:
  // Writes sources[i] to DIRECTORY/kernelsI.cpp, compiles each into kernelsI.so (options.jobs at a time)
  // and loads them all. @throws CompileError when a compiler fails or a library does not load.
  KernelLibrary(const std::vector<std::string>& sources, const std::string& directory, const CompileOptions& options = {});
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The exported function `name` from any of the libraries, or nullptr.
  RelayoutKernel find(const std::string& name) const;

 private:
  std::vector<void*> handles_;
};

}  // namespace kvlayout::native

#pragma once
// Emitted CPU kernels made callable in this process: each source (a complete translation unit from
// emit::emit_kernel) is compiled with the system compiler into a shared object and loaded with dlopen.
// Used by the benchmarks, the tests that run kernels against the byte oracle, and callers that want a
// kernel without a build system of their own.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvlayout::native {

// The C ABI of every emitted relayout kernel (see emit/header.cpp).
using RelayoutKernel = int (*)(void* const* src, void* const* dst, const std::int32_t* const* src_tables,
                               const std::int32_t* const* dst_tables, std::int64_t num_tokens, int num_threads);

enum class Language { Cpp, Cuda };

struct CompileOptions {
  std::string compiler;                        // empty: $CXX, else "c++" ($NVCC, else "nvcc", for Cuda)
  std::vector<std::string> flags = {"-O2"};    // besides -std=c++17 -fPIC -shared -pthread (nvcc: -Xcompiler)
  int jobs = 2;                                // compilers run at once
  bool warnings_are_errors = false;            // -Wall -Wextra -Werror (nvcc: -Wall); the tests hold generated code to it
  Language language = Language::Cpp;           // Cuda: sources are .cu files, compiled by nvcc
  // C++ only: each source compiled to DIRECTORY/kernelsI.s first (-S, the same flags), then assembled and
  // linked; the assembly stays for a reader such as native::streaming_store_groups.
  bool keep_assembly = false;
};

// A compiler failure: the message holds the command and the compiler's first 4000 characters of output.
struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class KernelLibrary {
 public:
  // Writes sources[i] to DIRECTORY/kernelsI.cpp, compiles each into kernelsI.so (options.jobs at a time;
  // through kernelsI.s with options.keep_assembly) and loads them all.
  // @throws CompileError when a compiler fails or a library does not load.
  KernelLibrary(const std::vector<std::string>& sources, const std::string& directory, const CompileOptions& options = {});
  // Loads libraries compiled before (the DIRECTORY/kernelsI.so files of an earlier KernelLibrary).
  // @throws CompileError when one does not load.
  static std::unique_ptr<KernelLibrary> load(const std::vector<std::string>& shared_objects);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The exported function `name` from any of the libraries, or nullptr.
  RelayoutKernel find(const std::string& name) const;

  // The shared objects, in the order of the sources.
  const std::vector<std::string>& files() const { return files_; }

 private:
  KernelLibrary() = default;
  void open_all(const std::vector<std::string>& shared_objects);  // @post handles_.size() == shared_objects.size()
  std::vector<std::string> files_;
  std::vector<void*> handles_;
};

}  // namespace kvlayout::native

#include "native/kernel_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "native/process.hpp"

namespace kvlayout::native {
namespace {

std::string compiler_of(const CompileOptions& o) {
  if (!o.compiler.empty()) return o.compiler;
  const bool cuda = o.language == Language::Cuda;
  const char* from_env = std::getenv(cuda ? "NVCC" : "CXX");
  return from_env != nullptr && *from_env != '\0' ? from_env : cuda ? "nvcc" : "c++";
}

// The compiler's command for one translation unit (without the options' own flags).
std::vector<std::string> base_command(const CompileOptions& o) {
  if (o.language == Language::Cuda) return {compiler_of(o), "-std=c++17", "-Xcompiler", "-fPIC", "-shared"};
  return {compiler_of(o), "-std=c++17", "-fPIC", "-shared", "-pthread"};
}

using Job = Process;

// Starts `job`. @post job.pid > 0, or CompileError.
void start_compiler(Job& job) {
  if (!start_process(job))
    throw CompileError("cannot start the compiler '" + job.argv[0] + "' (set $CXX to a C++17 compiler, $NVCC to nvcc)");
}

// Waits for `job`. @throws CompileError with the compiler's output unless it exited 0 and printed nothing
// (a warning in generated code is a generator bug when warnings are errors; otherwise output is allowed).
void finish(Job& job, bool quiet_required) {
  const int status = wait_for(job);
  const std::string text = output(job);
  if (status != 0 || (quiet_required && !text.empty()))
    throw CompileError("compiling an emitted kernel failed: " + command_line(job) + "\n" + text.substr(0, 4000));
}

// Runs `jobs`, at most `width` at a time; every started compiler is waited for.
// @throws CompileError with the first failure's command and output.
void run_all(std::vector<Job>& jobs, std::size_t width, bool quiet_required) {
  std::string failure;
  for (std::size_t first = 0; first < jobs.size(); first += width) {
    const std::size_t end = std::min(jobs.size(), first + width);
    std::size_t started = first;
    try {
      for (; started < end; ++started) start_compiler(jobs[started]);
    } catch (const CompileError& e) {
      failure = e.what();
    }
    for (std::size_t j = first; j < started; ++j) try {
        finish(jobs[j], quiet_required);
      } catch (const CompileError& e) {
        if (failure.empty()) failure = e.what();
      }
    if (!failure.empty()) throw CompileError(failure);
  }
}

}  // namespace

KernelLibrary::KernelLibrary(const std::vector<std::string>& sources, const std::string& directory, const CompileOptions& options) {
  if (options.keep_assembly && options.language != Language::Cpp) throw CompileError("keep_assembly is for C++ kernels only");
  std::vector<Job> compiles, links;
  std::vector<std::string> libraries;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string stem = directory + "/kernels" + std::to_string(i);
    const std::string file = stem + (options.language == Language::Cuda ? ".cu" : ".cpp");
    std::ofstream(file) << sources[i];
    Job job;
    job.argv = base_command(options);
    for (const auto& f : options.flags) job.argv.push_back(f);
    if (options.warnings_are_errors) {
      if (options.language == Language::Cuda) job.argv.insert(job.argv.end(), {"-Xcompiler", "-Wall", "-Werror", "all-warnings"});
      else job.argv.insert(job.argv.end(), {"-Wall", "-Wextra", "-Werror"});
    }
    job.log = stem + ".log";
    if (options.keep_assembly) {
      // -S without -shared, and the link without -std: clang warns of an argument a step does not use.
      job.argv.erase(std::find(job.argv.begin(), job.argv.end(), "-shared"));
      job.argv.insert(job.argv.end(), {"-S", file, "-o", stem + ".s"});
      Job link;
      link.argv = {compiler_of(options), "-fPIC", "-shared", "-pthread", stem + ".s", "-o", stem + ".so"};
      link.log = stem + ".link.log";
      links.push_back(std::move(link));
    } else {
      job.argv.insert(job.argv.end(), {file, "-o", stem + ".so"});
    }
    compiles.push_back(std::move(job));
    libraries.push_back(stem + ".so");
  }
  const std::size_t width = static_cast<std::size_t>(options.jobs < 1 ? 1 : options.jobs);
  // Phase 1: compile (to assembly, with keep_assembly); phase 2: assemble and link that.
  run_all(compiles, width, options.warnings_are_errors);
  run_all(links, width, options.warnings_are_errors);
  // Phase 3: load.
  open_all(libraries);
}

std::unique_ptr<KernelLibrary> KernelLibrary::load(const std::vector<std::string>& shared_objects) {
  std::unique_ptr<KernelLibrary> library(new KernelLibrary());
  library->open_all(shared_objects);
  return library;
}

void KernelLibrary::open_all(const std::vector<std::string>& shared_objects) {
  for (const auto& so : shared_objects) {
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      for (void* loaded : handles_) dlclose(loaded);
      handles_.clear();
      throw CompileError(std::string("cannot load a compiled kernel: ") + dlerror());
    }
    handles_.push_back(h);
  }
  files_ = shared_objects;
}

KernelLibrary::~KernelLibrary() {
  for (void* h : handles_) dlclose(h);
}

RelayoutKernel KernelLibrary::find(const std::string& name) const {
  for (void* h : handles_)
    if (void* f = dlsym(h, name.c_str())) return reinterpret_cast<RelayoutKernel>(f);
  return nullptr;
}

}  // namespace kvlayout::native

#pragma once
// A compiled relayout kernel as the Python package calls it: the loaded function and the buffers its ABI
// (emit/abi.hpp, read from `kvlayout emit --json`) says it takes. Every call is checked against that ABI
// first — count, device, element type, size and contiguity of each array, the tables, num_tokens — so
// that a wrong argument is an exception naming it, never a write out of bounds.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/ndarray.h>

#include "native/kernel_library.hpp"
#include "spec/error.hpp"

namespace kvlayout::python {

namespace nb = nanobind;

// A call argument that does not match the kernel's ABI (a SpecError: path names the argument, e.g.
// "dst_buffers[2]"). The module raises it as kvlayout.ArgumentError.
struct ArgumentError : spec::SpecError {
  using spec::SpecError::SpecError;
};

// A kernel that returned a code other than 0 (raised as kvlayout.KernelError).
struct KernelFailure : std::runtime_error {
  KernelFailure(int code, std::string meaning)
      : std::runtime_error("the kernel returned " + std::to_string(code) + ": " + meaning), code(code), meaning(std::move(meaning)) {}
  int code;
  std::string meaning;
};

struct ExpectedBuffer {
  std::string what;          // "kv_cache instance 3 (layer 3)", for messages
  std::int64_t elements = 0;
  int element_bytes = 0;
  std::string dtype;         // the declared element type
  // The DLPack (code, bits) pairs an array may have to hold it: check::storage_compatible's rule,
  // evaluated once when the signature is read, so that a call compares integers only.
  std::vector<std::pair<std::uint8_t, std::uint8_t>> accepted;
};

struct ExpectedTable {
  std::string name;
  std::int64_t length = 0;
};

// What a kernel takes, from the "abi" member of `kvlayout emit --json`.
struct KernelSignature {
  std::string function;
  bool cuda = false;
  std::int64_t max_tokens = 0;
  std::vector<ExpectedBuffer> source, destination;
  std::vector<ExpectedTable> source_tables, destination_tables;
  std::vector<std::string> return_codes;  // meaning of code i
};

// @throws SpecError for an ABI document that is not what `kvlayout emit --json` writes.
KernelSignature parse_signature(const std::string& abi_json);

using SourceArray = nb::ndarray<nb::ro>;
using DestinationArray = nb::ndarray<>;

class Kernel {
 public:
  Kernel(std::unique_ptr<native::KernelLibrary> library, KernelSignature signature);

  // Checks the arguments against the ABI and runs the kernel (the GIL released).
  // @throws ArgumentError before anything runs; KernelFailure when the kernel returns non-zero.
  void call(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
            const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
            std::int64_t num_tokens, int threads) const;

  // The bare C call, `repetitions` times after the same checks once: seconds per call (for measuring
  // what the Python wrapper adds).
  std::vector<double> time_bare(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
                                const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
                                std::int64_t num_tokens, int threads, int repetitions) const;

  const KernelSignature& signature() const { return signature_; }
  const std::vector<std::string>& files() const { return library_->files(); }

 private:
  struct Pointers {
    std::vector<void*> src, dst;
    std::vector<const std::int32_t*> src_tables, dst_tables;
  };
  Pointers checked(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
                   const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
                   std::int64_t num_tokens, int threads) const;

  std::unique_ptr<native::KernelLibrary> library_;
  native::RelayoutKernel function_ = nullptr;
  KernelSignature signature_;
};

}  // namespace kvlayout::python

#pragma once
// The C ABI of one emitted kernel, as data: which buffer each src[i] / dst[i] pointer must be (tensor,
// instance, size, element type), which table each table pointer is and what it may hold, the largest
// num_tokens, and the meaning of each return code. One home for these facts: the kernel's header
// comment prints them, `kvlayout emit --json` writes them, and the Python package checks its callers'
// buffers against them before a call.
#include <cstdint>
#include <string>
#include <vector>

#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::emit {

struct AbiBuffer {
  int pointer = 0;              // index into src[] or dst[]
  std::string tensor;           // the declared tensor
  std::int64_t instance = 0;    // its instance
  std::string per;              // the coordinate selecting the instance ("" for a single instance)
  std::int64_t per_value = 0;   // that coordinate's value for this instance
  std::int64_t elements = 0;    // the allocation, in elements
  std::string dtype;            // the declared element type (spec::dtype_name)
  int element_bytes = 0;
};

struct AbiTable {
  int pointer = 0;              // index into src_tables[] or dst_tables[]
  std::string name;
  std::int64_t length = 0;      // entries a caller passes (the kernel reads those of tokens < num_tokens)
  std::int64_t first = 0;       // entries lie in [first, end) and are distinct (else return code 2 / 5)
  std::int64_t end = 0;
};

struct AbiSide {
  std::string layout;
  std::vector<AbiBuffer> buffers;
  std::vector<AbiTable> tables;
};

struct KernelAbi {
  std::string function;
  Target target = Target::Cpu;
  AbiSide source, destination;
  std::int64_t max_tokens = 0;  // 0 <= num_tokens <= max_tokens (return code 1 otherwise)
};

struct ReturnCode {
  int code;
  const char* meaning;
};
// Every code an emitted kernel returns, 0 first.
const std::vector<ReturnCode>& kernel_return_codes();

// @pre plan is make_plan(*proof.source_bound, *proof.target_bound)
KernelAbi kernel_abi(const prove::Proof& proof, const Plan& plan, const EmitOptions& options);
// The same, building the plan (what `kvlayout emit --json` prints beside the kernel).
KernelAbi kernel_abi(const prove::Proof& proof, const EmitOptions& options);

// {"function", "target", "signature", "max_tokens", "source": {"layout", "buffers": [...], "tables": [...]},
//  "destination": {...}, "return_codes": [{"code", "meaning"}]}
spec::Json to_json(const KernelAbi& abi);

// The C prototype of `function`.
std::string signature(const std::string& function);

}  // namespace kvlayout::emit

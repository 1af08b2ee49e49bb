#pragma once
// The element types a tensor dump may name, as torch and numpy spell them, and what each means to a
// declaration. A dump records how the bits are *stored*; a declaration says what they *mean* (vLLM keeps
// fp8 values in a uint8 tensor, numpy has no bfloat16 and carries it in uint16), so compatibility is not
// name equality: see storage_compatible().
#include <optional>
#include <string>

#include "spec/dtype.hpp"

namespace kvlayout::check {

struct StorageDType {
  std::string name;                   // canonical spelling ("bfloat16", "uint8")
  int bytes = 0;                      // element size
  std::optional<spec::DType> meaning; // the declared dtype it spells, if any ("bfloat16" -> bf16)
  bool raw = false;                   // an unsigned integer container: raw bits of any type of its width
};

// A dtype as a dump spells it: torch ("torch.bfloat16", "bfloat16", "float8_e4m3fn"), numpy ("float16",
// "uint16") or kvlayout ("bf16"). nullopt for an unknown name (the loader makes that bad input).
std::optional<StorageDType> parse_storage_dtype(const std::string& name);

// Whether a tensor stored as `stored` can hold the declared element type: the same type, or a raw
// unsigned container of the same width (uint8 for fp8/int8, uint16 for bf16/fp16, uint32 for fp32).
// A raw container says nothing about the bits' meaning, so this is the most a dump can confirm; a
// differently-typed tensor (float16 for a bf16 declaration, float8_e4m3fnuz for fp8_e4m3) is refused.
bool storage_compatible(const StorageDType& stored, spec::DType declared);

// The names parse_storage_dtype() accepts, for error messages.
std::string storage_dtype_names();

}  // namespace kvlayout::check

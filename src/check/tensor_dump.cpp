#include "check/tensor_dump.hpp"

#include <vector>

namespace kvlayout::check {
namespace {

struct Spelling {
  const char* name;
  StorageDType dtype;
};

// One row per spelling; torch's, numpy's and kvlayout's names of one type share a canonical name.
const std::vector<Spelling>& spellings() {
  using spec::DType;
  static const std::vector<Spelling> rows = {
      {"bfloat16", {"bfloat16", 2, DType::bf16, false}},
      {"bf16", {"bfloat16", 2, DType::bf16, false}},
      {"float16", {"float16", 2, DType::fp16, false}},
      {"half", {"float16", 2, DType::fp16, false}},
      {"fp16", {"float16", 2, DType::fp16, false}},
      {"float32", {"float32", 4, DType::fp32, false}},
      {"float", {"float32", 4, DType::fp32, false}},
      {"fp32", {"float32", 4, DType::fp32, false}},
      {"float8_e4m3fn", {"float8_e4m3fn", 1, DType::fp8_e4m3, false}},
      {"fp8_e4m3", {"float8_e4m3fn", 1, DType::fp8_e4m3, false}},
      {"float8_e5m2", {"float8_e5m2", 1, DType::fp8_e5m2, false}},
      {"fp8_e5m2", {"float8_e5m2", 1, DType::fp8_e5m2, false}},
      // ROCm's fnuz encodings are other types of the same width (no negative zero, another bias).
      {"float8_e4m3fnuz", {"float8_e4m3fnuz", 1, std::nullopt, false}},
      {"float8_e5m2fnuz", {"float8_e5m2fnuz", 1, std::nullopt, false}},
      {"int8", {"int8", 1, DType::int8, false}},
      {"uint8", {"uint8", 1, DType::uint8, true}},
      {"int16", {"int16", 2, std::nullopt, false}},
      {"uint16", {"uint16", 2, std::nullopt, true}},
      {"int32", {"int32", 4, std::nullopt, false}},
      {"uint32", {"uint32", 4, std::nullopt, true}},
      {"int64", {"int64", 8, std::nullopt, false}},
      {"uint64", {"uint64", 8, std::nullopt, true}},
      {"float64", {"float64", 8, std::nullopt, false}},
      {"double", {"float64", 8, std::nullopt, false}},
      {"bool", {"bool", 1, std::nullopt, false}},
  };
  return rows;
}

}  // namespace

std::optional<StorageDType> parse_storage_dtype(const std::string& name) {
  std::string n = name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
  for (const auto& s : spellings())
    if (n == s.name) return s.dtype;
  return std::nullopt;
}

bool storage_compatible(const StorageDType& stored, spec::DType declared) {
  if (stored.meaning == declared) return true;
  return stored.raw && stored.bytes == spec::dtype_bytes(declared);
}

std::string storage_dtype_names() {
  std::string out;
  for (const auto& s : spellings()) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

}  // namespace kvlayout::check

#include "emit/abi.hpp"

namespace kvlayout::emit {
namespace {

AbiSide side_of(const layout::BoundLayout& b) {
  AbiSide side;
  side.layout = b.layout->name;
  const std::string dtype = spec::dtype_name(b.layout->dtype);
  const int bytes = static_cast<int>(b.element_bytes());
  int pointer = 0;
  for (const auto& t : b.tensors)
    for (std::int64_t i = 0; i < t.instances; ++i)
      side.buffers.push_back({pointer++, t.name, i, t.per >= 0 ? b.coord_names[static_cast<std::size_t>(t.per)] : "",
                              t.per >= 0 ? t.per_first + i : 0, t.size, dtype, bytes});
  pointer = 0;
  for (const auto& t : b.tables) side.tables.push_back({pointer++, t.name, t.length, t.first, t.end});
  return side;
}

spec::Json side_json(const AbiSide& side) {
  spec::Json buffers = spec::Json::array(), tables = spec::Json::array();
  for (const auto& b : side.buffers) {
    spec::Json j = {{"pointer", b.pointer}, {"tensor", b.tensor}, {"instance", b.instance}};
    j["per"] = b.per.empty() ? spec::Json(nullptr) : spec::Json(b.per);
    j["per_value"] = b.per.empty() ? spec::Json(nullptr) : spec::Json(b.per_value);
    j["elements"] = b.elements;
    j["dtype"] = b.dtype;
    j["element_bytes"] = b.element_bytes;
    j["bytes"] = b.elements * b.element_bytes;
    buffers.push_back(std::move(j));
  }
  for (const auto& t : side.tables)
    tables.push_back({{"pointer", t.pointer}, {"name", t.name}, {"length", t.length}, {"first", t.first}, {"end", t.end}});
  return {{"layout", side.layout}, {"buffers", std::move(buffers)}, {"tables", std::move(tables)}};
}

}  // namespace

const std::vector<ReturnCode>& kernel_return_codes() {
  static const std::vector<ReturnCode> codes = {
      {0, "moved"},
      {1, "num_tokens out of range"},
      {2, "a table entry read is outside its range"},
      {3, "a null pointer"},
      {4, "a CUDA error"},
      {5, "two entries of one table hold the same block (the proof holds for injective tables)"},
  };
  return codes;
}

KernelAbi kernel_abi(const prove::Proof& proof, const Plan& plan, const EmitOptions& options) {
  KernelAbi abi;
  abi.function = options.name;
  abi.target = options.target;
  abi.source = side_of(*proof.source_bound);
  abi.destination = side_of(*proof.target_bound);
  abi.max_tokens = plan.capacity;
  return abi;
}

KernelAbi kernel_abi(const prove::Proof& proof, const EmitOptions& options) {
  return kernel_abi(proof, make_plan(*proof.source_bound, *proof.target_bound), options);
}

std::string signature(const std::string& function) {
  return "extern \"C\" int " + function +
         "(void* const* src, void* const* dst, const int32_t* const* src_tables, const int32_t* const* dst_tables, "
         "int64_t num_tokens, int num_threads);";
}

spec::Json to_json(const KernelAbi& abi) {
  spec::Json codes = spec::Json::array();
  for (const auto& c : kernel_return_codes()) codes.push_back({{"code", c.code}, {"meaning", c.meaning}});
  return {{"function", abi.function},
          {"target", abi.target == Target::Cuda ? "cuda" : "cpu"},
          {"signature", signature(abi.function)},
          {"max_tokens", abi.max_tokens},
          {"source", side_json(abi.source)},
          {"destination", side_json(abi.destination)},
          {"return_codes", std::move(codes)}};
}

}  // namespace kvlayout::emit

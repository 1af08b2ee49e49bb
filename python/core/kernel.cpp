#include "kernel.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "check/tensor_dump.hpp"
#include "spec/dtype.hpp"

namespace kvlayout::python {
namespace {

// The storage type of an array as a tensor dump spells it (check/tensor_dump.hpp), so that the call
// accepts exactly the containers `kvlayout check --tensors` accepts for the declared type.
std::string storage_name(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  const std::string bits = std::to_string(t.bits);
  switch (static_cast<C>(t.code)) {
    case C::Int: return "int" + bits;
    case C::UInt: return "uint" + bits;
    case C::Float: return "float" + bits;
    case C::Bfloat: return t.bits == 16 ? "bfloat16" : "bfloat" + bits;
    case C::Float8_E4M3FN: return "float8_e4m3fn";
    case C::Float8_E4M3FNUZ: return "float8_e4m3fnuz";
    case C::Float8_E5M2: return "float8_e5m2";
    case C::Float8_E5M2FNUZ: return "float8_e5m2fnuz";
    case C::Bool: return "bool";
    default: return "dlpack code " + std::to_string(t.code) + " of " + bits + " bits";
  }
}

const char* device_name(int device_type) {
  if (device_type == nb::device::cpu::value) return "cpu";
  if (device_type == nb::device::cuda::value) return "cuda";
  if (device_type == nb::device::cuda_host::value) return "cuda_host (pinned host memory)";
  if (device_type == nb::device::cuda_managed::value) return "cuda_managed";
  return "another device";
}

// Whether the array's elements are dense in row-major order (extents of 1 may have any stride).
template <typename Array>
bool row_major_dense(const Array& a) {
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) == 1) continue;
    if (a.stride(i) != expected) return false;
    expected *= static_cast<std::int64_t>(a.shape(i));
  }
  return true;
}

template <typename Array>
std::string shape_text(const Array& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// "src_buffers[3]": built only when a check fails (the checks run on every call).
std::string path_of(const char* name, std::size_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

template <typename Array>
void check_device(const Array& a, bool cuda, const char* name, std::size_t i) {
  const int want = cuda ? nb::device::cuda::value : nb::device::cpu::value;
  if (a.device_type() != want)
    throw ArgumentError("", path_of(name, i), "an array on " + std::string(device_name(a.device_type())),
                        std::string("an array on ") + (cuda ? "cuda (this Relayout's device)" : "cpu (this Relayout's device)"));
}

bool accepts(const ExpectedBuffer& e, nb::dlpack::dtype t) {
  for (const auto& [code, bits] : e.accepted)
    if (t.code == code && t.bits == bits && t.lanes == 1) return true;
  return false;
}

// Every (code, bits) a dump-spelt storage type of `declared` can have (check::storage_compatible).
std::vector<std::pair<std::uint8_t, std::uint8_t>> accepted_storage(const std::string& declared_name) {
  std::vector<std::pair<std::uint8_t, std::uint8_t>> out;
  const auto declared = spec::parse_dtype(declared_name);
  if (!declared) return out;
  for (std::uint8_t code = 0; code <= 18; ++code)
    for (std::uint8_t bits : {8, 16, 32, 64}) {
      nb::dlpack::dtype t{};
      t.code = code;
      t.bits = bits;
      t.lanes = 1;
      auto stored = check::parse_storage_dtype(storage_name(t));
      if (stored && stored->bytes * 8 == bits && check::storage_compatible(*stored, *declared)) out.emplace_back(code, bits);
    }
  return out;
}

template <typename Array>
void check_buffer(const Array& a, const ExpectedBuffer& e, bool cuda, const char* name, std::size_t i) {
  check_device(a, cuda, name, i);
  if (!accepts(e, a.dtype()))
    throw ArgumentError("", path_of(name, i), "dtype " + storage_name(a.dtype()) + " for " + e.what,
                        "a container of " + e.dtype + " elements: that type, or an unsigned integer of " +
                            std::to_string(8 * e.element_bytes) + " bits holding its raw bits");
  const std::int64_t bytes = static_cast<std::int64_t>(a.nbytes());
  if (bytes != e.elements * e.element_bytes)
    throw ArgumentError("", path_of(name, i), std::to_string(bytes) + " bytes (shape " + shape_text(a) + ") for " + e.what,
                        std::to_string(e.elements * e.element_bytes) + " bytes (" + std::to_string(e.elements) + " elements of " +
                            e.dtype + ")");
  if (!row_major_dense(a))
    throw ArgumentError("", path_of(name, i), "a strided (non-contiguous) array for " + e.what,
                        "a C-contiguous array (the kernel addresses the whole allocation from its base)");
}

template <typename Array>
void check_count(const std::vector<Array>& arrays, std::size_t expected, const std::string& name, const std::string& what) {
  if (arrays.size() != expected)
    throw ArgumentError("", name, std::to_string(arrays.size()) + " arrays",
                        std::to_string(expected) + " (" + what + ")");
}

std::string buffer_list(const std::vector<ExpectedBuffer>& buffers) {
  if (buffers.empty()) return "none";
  return buffers.front().what + (buffers.size() > 1 ? " .. " + buffers.back().what : "");
}

}  // namespace

KernelSignature parse_signature(const std::string& abi_json) {
  KernelSignature s;
  try {
    const nlohmann::json abi = nlohmann::json::parse(abi_json);
    s.function = abi.at("function").get<std::string>();
    s.cuda = abi.at("target").get<std::string>() == "cuda";
    s.max_tokens = abi.at("max_tokens").get<std::int64_t>();
    auto buffers = [](const nlohmann::json& side) {
      std::vector<ExpectedBuffer> out;
      for (const auto& b : side.at("buffers")) {
        std::string what = b.at("tensor").get<std::string>() + " instance " + std::to_string(b.at("instance").get<std::int64_t>());
        if (!b.at("per").is_null())
          what += " (" + b.at("per").get<std::string>() + " " + std::to_string(b.at("per_value").get<std::int64_t>()) + ")";
        const std::string dtype = b.at("dtype").get<std::string>();
        out.push_back({what, b.at("elements").get<std::int64_t>(), b.at("element_bytes").get<int>(), dtype, accepted_storage(dtype)});
      }
      return out;
    };
    auto tables = [](const nlohmann::json& side) {
      std::vector<ExpectedTable> out;
      for (const auto& t : side.at("tables")) out.push_back({t.at("name").get<std::string>(), t.at("length").get<std::int64_t>()});
      return out;
    };
    s.source = buffers(abi.at("source"));
    s.destination = buffers(abi.at("destination"));
    s.source_tables = tables(abi.at("source"));
    s.destination_tables = tables(abi.at("destination"));
    for (const auto& c : abi.at("return_codes")) {
      const auto code = c.at("code").get<std::size_t>();
      if (s.return_codes.size() <= code) s.return_codes.resize(code + 1);
      s.return_codes[code] = c.at("meaning").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw spec::SpecError("", "abi", std::string("an ABI document that does not parse: ") + e.what(),
                          "the \"abi\" member of kvlayout emit --json");
  }
  return s;
}

Kernel::Kernel(std::unique_ptr<native::KernelLibrary> library, KernelSignature signature)
    : library_(std::move(library)), signature_(std::move(signature)) {
  function_ = library_->find(signature_.function);
  if (function_ == nullptr)
    throw native::CompileError("the compiled kernel does not export " + signature_.function);
}

Kernel::Pointers Kernel::checked(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
                                 const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
                                 std::int64_t num_tokens, int threads) const {
  const KernelSignature& s = signature_;
  if (src.size() != s.source.size()) check_count(src, s.source.size(), "src_buffers", buffer_list(s.source));
  if (dst.size() != s.destination.size()) check_count(dst, s.destination.size(), "dst_buffers", buffer_list(s.destination));
  Pointers p;
  for (std::size_t i = 0; i < src.size(); ++i) {
    check_buffer(src[i], s.source[i], s.cuda, "src_buffers", i);
    p.src.push_back(const_cast<void*>(src[i].data()));
  }
  for (std::size_t i = 0; i < dst.size(); ++i) {
    check_buffer(dst[i], s.destination[i], s.cuda, "dst_buffers", i);
    p.dst.push_back(dst[i].data());
  }
  auto tables = [&](const std::vector<SourceArray>& given, const std::vector<ExpectedTable>& expected, const char* name,
                    std::vector<const std::int32_t*>& out) {
    if (given.size() != expected.size()) {
      std::string names;
      for (const auto& t : expected) names += (names.empty() ? "" : ", ") + t.name;
      check_count(given, expected.size(), name, expected.empty() ? "this side has no block table" : names);
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
      const auto& t = given[i];
      check_device(t, s.cuda, name, i);
      const auto d = t.dtype();
      if (d.code != static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int) || d.bits != 32)
        throw ArgumentError("", path_of(name, i), "dtype " + storage_name(d) + " for table " + expected[i].name, "int32 entries");
      if (!row_major_dense(t))
        throw ArgumentError("", path_of(name, i), "a strided (non-contiguous) array for table " + expected[i].name, "a C-contiguous array");
      if (static_cast<std::int64_t>(t.size()) < expected[i].length)
        throw ArgumentError("", path_of(name, i), std::to_string(t.size()) + " entries for table " + expected[i].name,
                            "at least " + std::to_string(expected[i].length) + " (the kernel reads those of tokens < num_tokens)");
      out.push_back(static_cast<const std::int32_t*>(t.data()));
    }
  };
  tables(src_tables, s.source_tables, "src_tables", p.src_tables);
  tables(dst_tables, s.destination_tables, "dst_tables", p.dst_tables);
  if (num_tokens < 0 || num_tokens > s.max_tokens)
    throw ArgumentError("", "num_tokens", std::to_string(num_tokens), "0 <= num_tokens <= " + std::to_string(s.max_tokens));
  if (threads < 1) throw ArgumentError("", "threads", std::to_string(threads), "a positive number of threads");
  return p;
}

void Kernel::call(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
                  const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
                  std::int64_t num_tokens, int threads) const {
  Pointers p = checked(src, dst, src_tables, dst_tables, num_tokens, threads);
  int code;
  {
    nb::gil_scoped_release unlocked;
    code = function_(p.src.data(), p.dst.data(), p.src_tables.data(), p.dst_tables.data(), num_tokens, threads);
  }
  if (code != 0) {
    const auto& codes = signature_.return_codes;
    throw KernelFailure(code, code > 0 && static_cast<std::size_t>(code) < codes.size() ? codes[static_cast<std::size_t>(code)]
                                                                                          : "an undocumented code");
  }
}

std::vector<double> Kernel::time_bare(const std::vector<SourceArray>& src, const std::vector<DestinationArray>& dst,
                                      const std::vector<SourceArray>& src_tables, const std::vector<SourceArray>& dst_tables,
                                      std::int64_t num_tokens, int threads, int repetitions) const {
  Pointers p = checked(src, dst, src_tables, dst_tables, num_tokens, threads);
  std::vector<double> seconds;
  nb::gil_scoped_release unlocked;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const int code = function_(p.src.data(), p.dst.data(), p.src_tables.data(), p.dst_tables.data(), num_tokens, threads);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (code != 0) throw KernelFailure(code, "during timing");  // the GIL is taken back as `unlocked` ends
  }
  return seconds;
}

}  // namespace kvlayout::python

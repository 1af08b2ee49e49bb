// Loading a tensor dump (check/geometry.hpp): every field checked where it is read, so that a bad dump is
// a SpecError naming the file, the JSON path, what was found and what was expected (exit 2), never an
// exception of the JSON library or a silently wrapped number.
#include <cctype>
#include <map>
#include <tuple>

#include "check/geometry.hpp"
#include "check/tensor_dump.hpp"
#include "spec/error.hpp"
#include "spec/json_node.hpp"

namespace kvlayout::check {
namespace {

using spec::JsonNode;

// A list of int64, each checked by `accept` (what it must be is named by `what`).
template <class Accept>
std::vector<std::int64_t> integers(const JsonNode& node, const std::string& what, Accept accept) {
  std::vector<std::int64_t> out;
  for (const JsonNode& item : node.items("an array of " + what)) {
    std::int64_t v = item.integer(what);
    if (!accept(v)) item.fail("the integer " + std::to_string(v), what);
    out.push_back(v);
  }
  return out;
}

std::int64_t non_negative(const JsonNode& node, const std::string& what) {
  std::int64_t v = node.integer(what);
  if (v < 0) node.fail("the integer " + std::to_string(v), what);
  return v;
}

// A pointer as torch's data_ptr() prints it: a hex string ("0x7f..."), or a JSON integer in [0, 2^64).
std::uint64_t pointer(const JsonNode& node) {
  const std::string expected = "a hex string such as \"0x7f0000000000\" or a non-negative integer below 2^64";
  const auto& v = node.value();
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    std::int64_t i = v.get<std::int64_t>();
    if (i < 0) node.fail(spec::describe(v), expected);
    return static_cast<std::uint64_t>(i);
  }
  if (!v.is_string()) node.fail(spec::describe(v), expected);
  const std::string s = v.get<std::string>();
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s.size() > 18) node.fail(spec::describe(v), expected);
  std::uint64_t out = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) node.fail(spec::describe(v), expected);
    out = out * 16 + static_cast<std::uint64_t>(digit);  // at most 16 digits: never wraps
  }
  return out;
}

// Phase 1 of a record: its name, view and instance.
void read_identity(const JsonNode& rec, TensorRecord& r) {
  r.tensor = rec.at("tensor", "the declared tensor's name").name("the declared tensor's name");
  if (auto view = rec.find("view")) r.view = view->name("the declared view's name");
  r.instance = non_negative(rec.at("instance", "the instance number"), "an instance number >= 0");
}

// Phase 2: shape, stride and offset in elements, as torch's size(), stride() and storage_offset().
void read_geometry(const JsonNode& rec, TensorRecord& r) {
  r.shape = integers(rec.at("shape", "the tensor's shape"), "extents >= 0", [](std::int64_t v) { return v >= 0; });
  JsonNode stride = rec.at("stride", "the tensor's stride() in elements");
  r.stride = integers(stride, "strides >= 0 (in elements)", [](std::int64_t v) { return v >= 0; });
  if (r.stride.size() != r.shape.size())
    stride.fail("an array of " + std::to_string(r.stride.size()),
                "one stride per axis of the shape (" + std::to_string(r.shape.size()) + ")");
  r.storage_offset = non_negative(rec.at("storage_offset", "the storage offset in elements"), "a storage offset >= 0");
}

// Phase 3: element type and sizes; element_size must be the dtype's (a dump that disagrees with itself).
void read_storage(const JsonNode& rec, TensorRecord& r) {
  JsonNode dtype = rec.at("dtype", "the element type");
  r.dtype = dtype.string("the element type");
  auto stored = parse_storage_dtype(r.dtype);
  if (!stored) dtype.fail(spec::describe(dtype.value()), "one of " + storage_dtype_names());
  JsonNode esz = rec.at("element_size", "the element size in bytes");
  r.element_size = esz.integer("the element size in bytes");
  if (r.element_size != stored->bytes)
    esz.fail("the integer " + std::to_string(r.element_size),
             std::to_string(stored->bytes) + ", the size of " + r.dtype);
  r.nbytes = non_negative(rec.at("nbytes", "the tensor's nbytes"), "a byte count >= 0");
  if (auto s = rec.find("storage_nbytes")) r.storage_nbytes = non_negative(*s, "a byte count >= 0");
  r.data_ptr = pointer(rec.at("data_ptr", "the tensor's data_ptr()"));
}

}  // namespace

TensorDump load_tensor_dump(const std::string& file) {
  spec::Json json = spec::read_json_file(file);
  JsonNode root(json, file, "");
  root.expect_object();
  root.allow_only({"tensors", "note", "generator"});
  TensorDump dump;
  dump.file = file;
  // (tensor, view as written, instance) -> the path of the first record naming it.
  std::map<std::tuple<std::string, std::string, std::int64_t>, std::string> seen;
  for (const JsonNode& rec : root.at("tensors", "the list of tensor records").items("an array of tensor records")) {
    rec.expect_object();
    rec.allow_only({"tensor", "view", "instance", "shape", "stride", "storage_offset", "dtype", "element_size", "nbytes",
                    "storage_nbytes", "data_ptr", "device", "note"});
    TensorRecord r;
    r.path = rec.path();
    read_identity(rec, r);
    read_geometry(rec, r);
    read_storage(rec, r);
    auto key = std::make_tuple(r.tensor, r.view.value_or(""), r.instance);
    auto [it, inserted] = seen.emplace(key, r.path);
    if (!inserted)
      throw spec::SpecError(file, r.path, "a second record of " + r.tensor + (r.view ? " view " + *r.view : "") +
                                              " instance " + std::to_string(r.instance) + " (the first is " + it->second + ")",
                            "one record per tensor instance (and view)");
    dump.records.push_back(std::move(r));
  }
  return dump;
}

}  // namespace kvlayout::check

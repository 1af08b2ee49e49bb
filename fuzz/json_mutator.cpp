// The structural JSON mutator of json_mutator.hpp.
#include "json_mutator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/json_node.hpp"

namespace kvlayout::fuzz {
namespace {

// Values at the boundaries the checks guard: zero, signs, small shapes, the int64/uint64/double edges.
nlohmann::json boundary_value(std::mt19937_64& rng) {
  static const std::vector<nlohmann::json> values = {
      0, 1, -1, 2, 5, 16, 67, 1024, 2048, 4096, 20480, std::int64_t{1} << 31, std::int64_t{1} << 53,
      std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(),
      std::numeric_limits<std::uint64_t>::max(), 1e300, 0.5, -0.0, "0x0", "0x7f0000000000", "0x7e0000000000",
      "0x7fffffffffffffff", "0xffffffffffffffff", "0x8000000000000000", "18446744073709551615", "-1", "", "kv_cache",
      "paged_kv_cache", "bfloat16", "uint8", "float8_e4m3fn", "layer", "b", "num_blocks", "token < 32", "head < 2",
      "source.block_table[b] * 2048", "target.block_table[b] * 4096 + 2048", "block", "token", nullptr, true,
      nlohmann::json::array(), nlohmann::json::object()};
  return values[rng() % values.size()];
}

// Every value in the document, for picking one (the root first).
void collect(nlohmann::json& j, std::vector<nlohmann::json*>& out) {
  out.push_back(&j);
  if (j.is_object() || j.is_array())
    for (auto& child : j) collect(child, out);
}

void mutate_value(nlohmann::json& v, std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:  // a neighbour or a multiple of a number
      if (v.is_number_integer()) {
        const std::int64_t x = v.get<std::int64_t>();
        const std::int64_t d[] = {1, -1, 16, -16, 2048, -2048};
        if (rng() % 2) v = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(d[rng() % 6]));
        else v = rng() % 2 ? x / 2 : static_cast<std::int64_t>(static_cast<std::uint64_t>(x) * 2);
        return;
      }
      if (v.is_string() && v.get<std::string>().rfind("0x", 0) == 0) {  // an address a block or two off
        const std::uint64_t x = std::strtoull(v.get<std::string>().c_str() + 2, nullptr, 16);
        const std::uint64_t d = std::uint64_t{1} << (rng() % 16 + 4);
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(rng() % 2 ? x + d : x - d));
        v = buf;
        return;
      }
      v = boundary_value(rng);
      return;
    case 1:  // delete a member or an element
      if (v.is_object() && !v.empty()) {
        auto it = v.begin();
        std::advance(it, static_cast<long>(rng() % v.size()));
        v.erase(it);
      } else if (v.is_array() && !v.empty()) {
        v.erase(v.begin() + static_cast<long>(rng() % v.size()));
      }
      return;
    case 2:  // duplicate an element
      if (v.is_array() && !v.empty() && v.size() < 256) v.push_back(v[rng() % v.size()]);
      return;
    case 3:  // another member's value under this object's key (a field of the wrong kind)
      if (v.is_object() && v.size() >= 2) {
        auto a = v.begin(), b = v.begin();
        std::advance(a, static_cast<long>(rng() % v.size()));
        std::advance(b, static_cast<long>(rng() % v.size()));
        *a = nlohmann::json(*b);
      }
      return;
    default:
      v = boundary_value(rng);
      return;
  }
}

}  // namespace

std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size, std::size_t skip,
                        std::mt19937_64& rng) {
  if (size < skip) return 0;
  nlohmann::json doc;
  try {
    // The parser recurses: a document nested deeper than the loaders accept is left to byte mutations.
    doc = nlohmann::json::parse(data + skip, data + size, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > spec::kMaxJsonDepth) throw std::length_error("too deep");
      return true;
    });
  } catch (const std::exception&) {
    return 0;
  }
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < edits; ++i) {
    std::vector<nlohmann::json*> values;
    collect(doc, values);
    mutate_value(*values[rng() % values.size()], rng);
  }
  const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() + skip > max_size) return 0;
  std::memcpy(data + skip, text.data(), text.size());
  return text.size() + skip;
}


}  // namespace kvlayout::fuzz

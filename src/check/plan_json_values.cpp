// The scalar values of the concrete plan forms: addresses (integers or hex/decimal strings below 2^63),
// counts, and the strict member check used inside entries (a typo there would fall back to a default).
#include <algorithm>

#include "check/plan_json_util.hpp"

namespace kvlayout::check {

using namespace plan_json_util;

void allow_only(const nlohmann::json& object, const std::vector<std::string>& allowed, const std::string& file,
                const std::string& path) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      throw spec::SpecError(file, path + "/" + it.key(), "an unknown member \"" + it.key() + "\"", "one of: " + names);
    }
}

std::int64_t read_address(const nlohmann::json& v, const std::string& file, const std::string& path) {
  const char* expected = "an address: an integer >= 0 or a hex string \"0x...\"";
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, expected);
    std::int64_t a = v.get<std::int64_t>();
    if (a < 0) fail(file, path, v, expected);
    return a;
  }
  if (!v.is_string()) fail(file, path, v, expected);
  const std::string& s = v.get_ref<const std::string&>();
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const std::size_t from = hex ? 2 : 0;
  if (s.size() == from || s.size() - from > (hex ? 16u : 19u)) fail(file, path, v, expected);
  std::uint64_t value = 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) fail(file, path, v, expected);
    value = value * (hex ? 16 : 10) + static_cast<std::uint64_t>(d);
  }
  if (value > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, "an address below 2^63");
  return static_cast<std::int64_t>(value);
}

std::int64_t read_count(const nlohmann::json& v, const std::string& file, const std::string& path, bool positive) {
  const char* expected = positive ? "an integer > 0" : "an integer >= 0";
  if (!v.is_number_integer()) fail(file, path, v, expected);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) fail(file, path, v, expected);
  std::int64_t n = v.get<std::int64_t>();
  if (n < 0 || (positive && n == 0)) fail(file, path, v, expected);
  return n;
}

}  // namespace kvlayout::check

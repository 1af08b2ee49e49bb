#pragma once
// A position in a parsed JSON document: the value, its file and its JSON pointer. Every accessor checks the
// kind of value and throws SpecError naming the path, what was found and what was expected.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>

#include "spec/source_expr.hpp"

namespace kvlayout::spec {

using Json = nlohmann::ordered_json;

// Arrays and objects nested deeper than this are refused while parsing (no spec comes close; a deep document
// would overflow the stack when nlohmann copies it).
inline constexpr int kMaxJsonDepth = 64;

// Reads and parses a JSON file; a syntax error is reported with its line and column, nesting deeper than
// kMaxJsonDepth with the JSON pointer of the container that goes too deep.
Json read_json_file(const std::string& file);
// The same, into an unordered document (plans and tensor dumps, where member order carries no meaning and
// a million-entry document parses faster).
nlohmann::json read_plain_json_file(const std::string& file);

class JsonNode {
 public:
  JsonNode(const Json& value, std::string file, std::string path);

  const Json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& found, const std::string& expected) const;

  // Objects.
  void expect_object() const;
  bool has(const std::string& key) const;
  JsonNode at(const std::string& key, const std::string& expected) const;  // required member
  std::optional<JsonNode> find(const std::string& key) const;
  // Rejects members not in `allowed` (catches misspelt fields such as "stride_ordr").
  void allow_only(std::initializer_list<const char*> allowed) const;
  std::vector<std::pair<std::string, JsonNode>> members() const;

  // Arrays.
  std::vector<JsonNode> items(const std::string& expected) const;

  // Scalars.
  std::string string(const std::string& expected) const;
  // A string naming something (a layout, tensor, view, content, citation field): not empty, no control
  // characters (names are printed in messages and in the comments of emitted kernels).
  std::string name(const std::string& expected) const;
  // A JSON integer in [-2^63, 2^63); a larger one (nlohmann reads it as unsigned) is an error, never a wrap.
  std::int64_t integer(const std::string& expected) const;
  bool boolean(const std::string& expected) const;
  // An integer literal or a string in the expression language (parsed, not yet checked for names).
  SourceExpr expression(const std::string& expected) const;

 private:
  // The value as an int64 if it is a JSON integer (throws if it is one beyond int64), or nullopt.
  std::optional<std::int64_t> int64_value() const;

  const Json* value_;
  std::string file_;
  std::string path_;
};

// A short rendering of a JSON value for error messages ("a string \"abc\"", "an array of 3", ...).
std::string describe(const Json& value);

}  // namespace kvlayout::spec

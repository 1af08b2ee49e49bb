#include "spec/json_node.hpp"

#include <fstream>
#include <limits>
#include <sstream>

#include "expr/parse.hpp"
#include "spec/error.hpp"

namespace kvlayout::spec {

namespace {
std::string escape_pointer(const std::string& key) {
  std::string s;
  for (char c : key) s += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return s;
}
}  // namespace

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return std::string("the boolean ") + (v.get<bool>() ? "true" : "false");
    case Json::value_t::string: return "the string " + v.dump();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "the integer " + v.dump();
    case Json::value_t::number_float: return "the number " + v.dump();
    case Json::value_t::array: return "an array of " + std::to_string(v.size());
    case Json::value_t::object: return "an object";
    default: return "a value";
  }
}

namespace {

// Where the first array or object nested deeper than `limit` opens in `text`, a prefix the parser accepted:
// its JSON pointer (up to that container), line and column.
struct DeepPoint {
  std::string pointer;
  std::size_t line = 1, column = 1;
};

DeepPoint find_deep_point(const std::string& text, int limit) {
  struct Frame {
    bool object = false;
    std::size_t index = 0;
    std::string key;
    bool expect_key = true;
  };
  std::vector<Frame> stack;
  DeepPoint at;
  auto pointer = [&] {
    std::string s;
    for (const Frame& f : stack) s += "/" + (f.object ? escape_pointer(f.key) : std::to_string(f.index));
    return s;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      std::string str;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          char e = text[++i];
          str += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        } else {
          str += text[i];
        }
      }
      if (!stack.empty() && stack.back().object && stack.back().expect_key) stack.back().key = str;
    } else if (c == '{' || c == '[') {
      if (static_cast<int>(stack.size()) >= limit) {
        at.pointer = pointer();
        for (std::size_t k = 0; k < i; ++k) {
          if (text[k] == '\n') { ++at.line; at.column = 1; } else { ++at.column; }
        }
        return at;
      }
      Frame f;
      f.object = c == '{';
      stack.push_back(f);
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) stack.back().expect_key = true;
      else ++stack.back().index;
    } else if (c == ':' && !stack.empty()) {
      stack.back().expect_key = false;
    }
  }
  return at;
}

struct TooDeep {};

}  // namespace

template <class Document>
Document parse_json_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SpecError(file, "", "a file that cannot be read", "a readable JSON file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  // The depth is checked while parsing, before a deep value exists: nlohmann copies nested values
  // recursively (an ordered object's members are copied when it grows), which would overflow the stack.
  auto limit_depth = [](int depth, typename Document::parse_event_t event, Document&) {
    if ((event == Document::parse_event_t::object_start || event == Document::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    return Document::parse(text, limit_depth);
  } catch (const TooDeep&) {
    DeepPoint at = find_deep_point(text, kMaxJsonDepth);
    throw SpecError(file, at.pointer.empty() ? "/" : at.pointer,
                    "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels of arrays and objects (at line " +
                        std::to_string(at.line) + " column " + std::to_string(at.column) + ")",
                    "a document nested at most " + std::to_string(kMaxJsonDepth) + " levels deep");
  } catch (const typename Document::parse_error& e) {
    // Turn nlohmann's byte offset into a line and column a user can jump to.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
    }
    std::string what = e.what();
    auto colon = what.rfind(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    throw SpecError(file, "", "malformed JSON at line " + std::to_string(line) + " column " +
                                  std::to_string(column) + " (" + detail + ")",
                    "a valid JSON document");
  } catch (const typename Document::exception& e) {
    // The parser throws out_of_range, not parse_error, for a number beyond a double (227e0470): found by
    // the spec fuzzer. Any other failure of the parser is malformed input too.
    std::string what = e.what();
    auto bracket = what.find("] ");
    throw SpecError(file, "", "malformed JSON (" + (bracket == std::string::npos ? what : what.substr(bracket + 2)) + ")",
                    "a valid JSON document with numbers a double can hold");
  }
}

Json read_json_file(const std::string& file) { return parse_json_file<Json>(file); }

nlohmann::json read_plain_json_file(const std::string& file) { return parse_json_file<nlohmann::json>(file); }

JsonNode::JsonNode(const Json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

void JsonNode::fail(const std::string& found, const std::string& expected) const {
  throw SpecError(file_, path_.empty() ? "/" : path_, found, expected);
}

void JsonNode::expect_object() const {
  if (!value_->is_object()) fail(describe(*value_), "an object");
}

bool JsonNode::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonNode JsonNode::at(const std::string& key, const std::string& expected) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) fail("no member \"" + key + "\"", "\"" + key + "\": " + expected);
  return JsonNode(*it, file_, path_ + "/" + escape_pointer(key));
}

std::optional<JsonNode> JsonNode::find(const std::string& key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonNode(*it, file_, path_ + "/" + escape_pointer(key));
}

void JsonNode::allow_only(std::initializer_list<const char*> allowed) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (ok) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw SpecError(file_, path_ + "/" + escape_pointer(it.key()), "an unknown member \"" + it.key() + "\"",
                    "one of: " + list);
  }
}

std::vector<std::pair<std::string, JsonNode>> JsonNode::members() const {
  expect_object();
  std::vector<std::pair<std::string, JsonNode>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it)
    out.emplace_back(it.key(), JsonNode(it.value(), file_, path_ + "/" + escape_pointer(it.key())));
  return out;
}

std::vector<JsonNode> JsonNode::items(const std::string& expected) const {
  if (!value_->is_array()) fail(describe(*value_), expected);
  std::vector<JsonNode> out;
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], file_, path_ + "/" + std::to_string(i));
  return out;
}

std::string JsonNode::string(const std::string& expected) const {
  if (!value_->is_string()) fail(describe(*value_), expected);
  return value_->get<std::string>();
}

std::string JsonNode::name(const std::string& expected) const {
  std::string s = string(expected);
  if (s.empty()) fail("the empty string", expected);
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      fail(describe(*value_) + ", which holds a control character", expected);
  return s;
}

std::int64_t JsonNode::integer(const std::string& expected) const {
  if (auto v = int64_value()) return *v;
  fail(describe(*value_), expected);
}

std::optional<std::int64_t> JsonNode::int64_value() const {
  if (value_->is_number_unsigned()) {
    // nlohmann reads every non-negative integer below 2^64 as unsigned; get<std::int64_t>() would wrap.
    if (value_->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(describe(*value_) + ", which does not fit in 64-bit signed arithmetic", "an integer in [-2^63, 2^63)");
    return static_cast<std::int64_t>(value_->get<std::uint64_t>());
  }
  if (value_->is_number_integer()) return value_->get<std::int64_t>();
  return std::nullopt;
}

bool JsonNode::boolean(const std::string& expected) const {
  if (!value_->is_boolean()) fail(describe(*value_), expected);
  return value_->get<bool>();
}

SourceExpr JsonNode::expression(const std::string& expected) const {
  if (auto v = int64_value()) return SourceExpr{expr::literal(*v), path_, std::to_string(*v)};
  if (!value_->is_string()) fail(describe(*value_), expected);
  std::string text = value_->get<std::string>();
  try {
    return SourceExpr{expr::parse(text), path_, text};
  } catch (const expr::ParseError& e) {
    fail("`" + text + "`, which does not parse: " + e.what() + " at column " + std::to_string(e.column),
         expected);
  }
}

}  // namespace kvlayout::spec

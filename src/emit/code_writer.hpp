#pragma once
// Indented source text, one statement per line.
#include <cstdint>
#include <string>

namespace kvlayout::emit {

// An int64_t constant as printed C: INT64_C(v).
inline std::string i64(std::int64_t v) { return "INT64_C(" + std::to_string(v) + ")"; }

class CodeWriter {
 public:
  CodeWriter& line(const std::string& text = "") {
    if (!text.empty()) out_ += std::string(static_cast<std::size_t>(indent_) * 2, ' ') + text;
    out_ += "\n";
    return *this;
  }
  CodeWriter& open(const std::string& text) {
    line(text + " {");
    ++indent_;
    return *this;
  }
  CodeWriter& close(const std::string& after = "") {
    --indent_;
    line("}" + after);
    return *this;
  }
  CodeWriter& raw(const std::string& text) {
    out_ += text;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
};

}  // namespace kvlayout::emit

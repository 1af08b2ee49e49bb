#include "emit/code_key.hpp"

#include <sstream>

#include "spec/sha256.hpp"

namespace kvlayout::emit {

std::string kernel_code_key(const std::string& source, const std::string& name) {
  std::size_t body = 0;
  while (body < source.size() && (source.compare(body, 2, "//") == 0 || source[body] == '\n')) {
    const std::size_t end = source.find('\n', body);
    body = end == std::string::npos ? source.size() : end + 1;
  }
  std::string key = source.substr(body);
  const std::string mark = "\x01name\x01";  // not in any emitted source: every occurrence is the name's
  for (std::size_t at = key.find(name); at != std::string::npos; at = key.find(name, at + mark.size()))
    key.replace(at, name.size(), mark);
  return key;
}

std::string kernel_code_digest(const std::string& source, const std::string& name) {
  std::istringstream lines(kernel_code_key(source, name));
  std::string code, line;
  while (std::getline(lines, line)) {
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    code += line + "\n";
  }
  return spec::sha256_text(code);
}

}  // namespace kvlayout::emit

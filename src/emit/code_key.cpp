#include "emit/code_key.hpp"

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

}  // namespace kvlayout::emit

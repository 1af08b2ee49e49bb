#include "emit/code_key.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "emit/code_writer.hpp"
#include "emit/cpu_choices.hpp"
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

std::string kernel_code_digest(const std::string& source, const std::string& name) { return kernel_code_digest(source, name, cpu_choices()); }

std::string kernel_code_digest(const std::string& source, const std::string& name, const std::vector<CpuChoice>& choices) {
  std::string key = kernel_code_key(source, name);
  // The per-CPU choices' declarations and per-call stores, which every CPU kernel carries, are left out;
  // each choice the kernel reads is named below with its values instead.
  const std::string declarations = cpu_choice_declarations(choices);
  if (const std::size_t at = key.find(declarations); at != std::string::npos) key.erase(at, declarations.size());
  CodeWriter stores;
  print_choice_stores(stores, choices);
  std::set<std::string> store_lines;
  std::istringstream store_text(stores.str());
  for (std::string line; std::getline(store_text, line);) store_lines.insert(line.substr(std::min(line.find_first_not_of(' '), line.size())));
  std::istringstream lines(key);
  std::string code, line;
  while (std::getline(lines, line)) {
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0 || store_lines.count(line.substr(first))) continue;
    code += line + "\n";
  }
  for (const CpuChoice& c : choices) {
    if (code.find(std::string("kv_") + c.flag + ".load(") == std::string::npos) continue;
    code += std::string("choice ") + c.flag + " " + c.variable + " " + (c.amd_avx2 ? "1" : "0") + (c.amd_avx512 ? "1" : "0") + (c.elsewhere ? "1" : "0");
    if (c.model_exception) code += std::string(" ") + c.model_exception->model + (c.model_exception->value ? " 1" : " 0");
    code += "\n";
  }
  return spec::sha256_text(code);
}

}  // namespace kvlayout::emit

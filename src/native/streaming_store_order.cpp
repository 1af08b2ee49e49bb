#include "native/streaming_store_order.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace kvlayout::native {
namespace {

// One instruction's mnemonic and operands, or a label (mnemonic ending in ':'), from a line of assembly.
struct Line {
  std::string mnemonic, operands;
};

Line split(const std::string& raw) {
  const std::size_t first = raw.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const std::size_t end = raw.find_first_of(" \t", first);
  Line line;
  line.mnemonic = raw.substr(first, end == std::string::npos ? std::string::npos : end - first);
  if (end != std::string::npos) {
    const std::size_t ops = raw.find_first_not_of(" \t", end);
    if (ops != std::string::npos) line.operands = raw.substr(ops);
  }
  return line;
}

// A streaming store's width, or 0 when the instruction is not one.
int streaming_store_width(const Line& line) {
  static const char* const kMnemonics[] = {"vmovntdq", "movntdq", "vmovntps", "movntps"};
  if (std::none_of(std::begin(kMnemonics), std::end(kMnemonics), [&](const char* m) { return line.mnemonic == m; })) return 0;
  if (line.operands.starts_with("%xmm")) return 16;
  if (line.operands.starts_with("%ymm")) return 32;
  if (line.operands.starts_with("%zmm")) return 64;
  return 0;
}

// Instructions a group runs on through: loads into vector registers and address arithmetic. Anything else
// (a label, a jump, a call, a compare) ends it.
bool passes_through(const Line& line) {
  static const char* const kPrefixes[] = {"vmovdqu", "vmovdqa", "movdqu", "movdqa", "vmovups", "movups", "lea", "add", "sub"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes), [&](const char* p) { return line.mnemonic.starts_with(p); });
}

// "OFF(%reg...)" -> {OFF, %reg}; OFF may be empty (0) or negative. False when the operand is not a memory one.
bool memory_operand(const std::string& operands, std::int64_t& offset, std::string& base) {
  const std::size_t comma = operands.find(',');
  if (comma == std::string::npos) return false;
  const std::size_t start = operands.find_first_not_of(' ', comma + 1), paren = operands.find('(', comma);
  if (start == std::string::npos || paren == std::string::npos) return false;
  const std::string displacement = operands.substr(start, paren - start);
  const std::size_t close = operands.find_first_of(",)", paren);
  if (close == std::string::npos) return false;
  base = operands.substr(paren + 1, close - paren - 1);
  if (displacement.empty()) {
    offset = 0;
    return true;
  }
  try {
    std::size_t used = 0;
    offset = std::stoll(displacement, &used, 0);
    return used == displacement.size();
  } catch (const std::exception&) {
    return false;  // a symbolic displacement: not a kernel's streaming store
  }
}

std::int64_t line_of(std::int64_t offset) { return offset >= 0 ? offset / 64 : -((-offset + 63) / 64); }

}  // namespace

std::vector<StreamingStoreGroup> streaming_store_groups(const std::string& assembly) {
  std::vector<StreamingStoreGroup> groups;
  StreamingStoreGroup open;
  std::string function;
  auto close = [&] {
    if (open.offsets.size() >= 2) groups.push_back(open);
    open = {};
  };
  std::istringstream lines(assembly);
  for (std::string raw; std::getline(lines, raw);) {
    const Line line = split(raw);
    if (line.mnemonic.empty()) continue;
    if (line.mnemonic.back() == ':') {  // a label: a function's own, or a local one (.L...) inside it
      close();
      if (line.mnemonic[0] != '.') function = line.mnemonic.substr(0, line.mnemonic.size() - 1);
      continue;
    }
    if (line.mnemonic[0] == '.') continue;  // a directive (.p2align, .cfi_...) is not an instruction
    if (const int width = streaming_store_width(line)) {
      std::int64_t offset = 0;
      std::string base;
      if (!memory_operand(line.operands, offset, base)) {
        close();
        continue;
      }
      if (base != open.base) close();
      open.function = function, open.base = base;
      open.offsets.push_back(offset), open.widths.push_back(width);
      continue;
    }
    if (!passes_through(line)) close();
  }
  close();
  return groups;
}

bool splits_lines(const StreamingStoreGroup& group) {
  std::set<std::int64_t> finished;  // lines left for another
  for (std::size_t i = 0; i < group.offsets.size(); ++i) {
    const std::int64_t line = line_of(group.offsets[i]);
    if (finished.count(line) != 0) return true;
    if (i > 0 && line_of(group.offsets[i - 1]) != line) finished.insert(line_of(group.offsets[i - 1]));
  }
  return false;
}

std::string generated_kernel_of(const std::string& function_label) {
  static const std::string kNamespace = "kvlayout_generated_";
  const std::size_t at = function_label.find(kNamespace);
  if (at == std::string::npos) return "";
  // Mangled (_ZN22kvlayout_generated_k17...): the length before the name bounds it.
  std::size_t digits = at;
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(function_label[digits - 1]))) --digits;
  const std::size_t begin = at + kNamespace.size();
  if (digits < at && at - digits <= 6) {
    const std::size_t length = std::stoul(function_label.substr(digits, at - digits));
    if (length > kNamespace.size() && at + length <= function_label.size()) return function_label.substr(begin, length - kNamespace.size());
  }
  std::size_t end = begin;
  while (end < function_label.size() && (std::isalnum(static_cast<unsigned char>(function_label[end])) || function_label[end] == '_')) ++end;
  return function_label.substr(begin, end - begin);
}

}  // namespace kvlayout::native

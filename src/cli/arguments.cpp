#include "cli/arguments.hpp"

#include <charconv>

#include "spec/error.hpp"

namespace kvlayout::cli {

Arguments::Arguments(const std::vector<std::string>& args, const std::vector<FlagSpec>& flags) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    std::string name;
    if (a.size() == 2 && a[0] == '-' && a[1] != '-') {
      for (const auto& f : flags)
        if (f.short_name == a.substr(1)) name = f.name;
      if (name.empty()) throw spec::SpecError("", "", "the unknown flag " + a, "a flag listed by --help");
    } else if (a.rfind("--", 0) != 0 || a == "--") {
      positional_.push_back(a);
      continue;
    } else {
      name = a.substr(2);
    }
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const auto& f : flags)
      if (f.name == name) spec = &f;
    if (!spec) {
      std::string known;
      for (const auto& f : flags) known += (known.empty() ? "--" : ", --") + f.name;
      throw spec::SpecError("", "", "the unknown flag --" + name, known.empty() ? "no flags" : "one of: " + known);
    }
    if (values_.count(name) && !spec->repeatable)
      throw spec::SpecError("", "", "--" + name + " given twice", "--" + name + " at most once");
    if (!spec->takes_value) {
      if (inline_value) throw spec::SpecError("", "", "--" + name + "=" + *inline_value, "--" + name + " alone");
      values_[name].push_back("");
      continue;
    }
    if (inline_value) {
      values_[name].push_back(*inline_value);
    } else if (i + 1 < args.size()) {
      values_[name].push_back(args[++i]);
    } else {
      throw spec::SpecError("", "", "--" + name + " at the end of the line", "--" + name + " followed by a value");
    }
  }
}

void Arguments::require_no_positional() const {
  if (!positional_.empty())
    throw spec::SpecError("", "", "the argument \"" + positional_.front() + "\"", "no positional arguments");
}

std::optional<std::string> Arguments::value(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Arguments::values(const std::string& flag) const {
  auto it = values_.find(flag);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& what) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw spec::SpecError("", "", what + " \"" + text + "\"", what + " written NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::int64_t parse_integer(const std::string& text, const std::string& what) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw spec::SpecError("", "", what + " \"" + text + "\"", "a decimal integer that fits in 64 bits");
  return v;
}

}  // namespace kvlayout::cli

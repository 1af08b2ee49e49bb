#pragma once
// Command-line flags: "--name value", "--name=value" and boolean "--name"; everything else is positional.
// kvlayout's dependency list has no argument parser, so this is the small one it needs.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvlayout::cli {

struct FlagSpec {
  FlagSpec(std::string name, bool takes_value = false, bool repeatable = false, std::string short_name = "")
      : name(std::move(name)), takes_value(takes_value), repeatable(repeatable), short_name(std::move(short_name)) {}
  std::string name;        // without the leading "--"
  bool takes_value;
  bool repeatable;
  std::string short_name;  // e.g. "o" for -o (optional)
};

class Arguments {
 public:
  // Throws SpecError (exit 2) for an unknown flag, a missing value or a repeated flag.
  Arguments(const std::vector<std::string>& args, const std::vector<FlagSpec>& flags);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> value(const std::string& flag) const;
  std::vector<std::string> values(const std::string& flag) const;
  bool help() const { return help_; }
  // Throws SpecError (exit 2) naming the first positional argument, for commands that take none.
  void require_no_positional() const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::vector<std::string>> values_;
  bool help_ = false;
};

// "NAME=VALUE" → (NAME, VALUE); throws SpecError naming `what` otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& what);
// A decimal 64-bit integer; throws SpecError naming `what` otherwise.
std::int64_t parse_integer(const std::string& text, const std::string& what);

}  // namespace kvlayout::cli

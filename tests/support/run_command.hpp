#pragma once
// Runs the built kvlayout binary (or any shell command) and captures its exit code, stdout and stderr.
#include <string>

namespace kvlayout::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& shell_command);
// Runs KVLAYOUT_BINARY with `arguments` (already shell-quoted as needed).
CommandResult run_kvlayout(const std::string& arguments);

}  // namespace kvlayout::test

#include "support/run_command.hpp"

#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "support/temp_dir.hpp"

namespace kvlayout::test {

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

CommandResult run_command(const std::string& shell_command) {
  TempDir dir;
  auto out = dir.path() / "out", err = dir.path() / "err";
  std::string full = "(" + shell_command + ") >'" + out.string() + "' 2>'" + err.string() + "' </dev/null";
  int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

CommandResult run_kvlayout(const std::string& arguments) {
  return run_command(std::string("'") + KVLAYOUT_BINARY + "' " + arguments);
}

}  // namespace kvlayout::test

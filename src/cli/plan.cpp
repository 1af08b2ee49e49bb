// kvlayout plan check | plan emit: the two plan subcommands (each in its own file).
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"

namespace kvlayout::cli {

int run_plan(const std::vector<std::string>& args) {
  const char* usage =
      "usage: kvlayout plan check SRC DST --cache CACHE --plan PLAN.json [--json] ...\n"
      "       kvlayout plan emit SRC DST --cache CACHE [--format families|runs|descriptors] [--json] ...\n"
      "Run `kvlayout plan check --help` or `kvlayout plan emit --help` for the flags.\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? kBadInput : kOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "check") return run_plan_check(rest);
  if (args[0] == "emit") return run_plan_emit(rest);
  std::cerr << "kvlayout plan: unknown subcommand \"" << args[0] << "\"; expected check or emit\n" << usage;
  return kBadInput;
}

}  // namespace kvlayout::cli

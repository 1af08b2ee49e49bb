// Placeholder until this subcommand lands (being written now).
#include <iostream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"

namespace kvlayout::cli {

int run_plan_check(const std::vector<std::string>&) {
  std::cerr << "kvlayout: not yet implemented\n";
  return kInternal;
}

}  // namespace kvlayout::cli

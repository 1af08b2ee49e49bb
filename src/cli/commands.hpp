#pragma once
// One function per subcommand: takes the arguments after the subcommand name, returns an exit code.
// SpecError propagates to main, which prints it and exits 2.
#include <string>
#include <vector>

namespace kvlayout::cli {

int run_list(const std::vector<std::string>& args);
int run_addr(const std::vector<std::string>& args);
int run_prove(const std::vector<std::string>& args);
int run_matrix(const std::vector<std::string>& args);
int run_certificate(const std::vector<std::string>& args);
int run_emit(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args);
int run_plan(const std::vector<std::string>& args);         // dispatches to the two below
int run_plan_check(const std::vector<std::string>& args);
int run_plan_emit(const std::vector<std::string>& args);
int run_report(const std::vector<std::string>& args);
int run_graph(const std::vector<std::string>& args);

}  // namespace kvlayout::cli

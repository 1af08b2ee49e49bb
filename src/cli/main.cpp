// kvlayout: prove, or refute with a counterexample, that moving a KV cache between two engines' layouts is
// exact; then generate the relayout kernel. This file only dispatches and turns errors into exit codes.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "spec/error.hpp"

namespace {

const char* kUsage = R"(usage: kvlayout COMMAND [ARGS...]

Declared KV-cache layouts of serving engines, and exact translations between them.

commands:
  list     list the declared layouts with their engine-source citations
  addr     the address (tensor, instance, element, byte) of one logical coordinate
  prove    prove or refute that moving a cache from one layout to another is exact
  matrix   grade every ordered pair of declared layouts, cross-checked by enumeration (the main job)
  certificate check FILE   re-derive a certificate from the specs and report any difference
  emit     generate the CPU or CUDA relayout kernel of a proven translation
  check    check an assumed layout against the real one, or a declaration against the real tensors
  plan check   check a transfer plan (descriptor lists, strided runs, symbolic families, slot maps)
  plan emit    the verified transfer plan of a proven pair (families, runs or descriptors)

Run `kvlayout COMMAND --help` for a command's flags.

exit codes: 0 yes (exact, OK); 1 a well-formed question answered no (a grade short of exact, a verdict
            other than OK); 2 bad input; 3 unknown (solver limit); 4 internal error
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace kvlayout::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? kBadInput : kOk;
  }
  if (args[0] == "--version") {
    std::cout << "kvlayout " << KVLAYOUT_VERSION << "\n";
    return kOk;
  }
  const std::string command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "list") return run_list(rest);
    if (command == "addr") return run_addr(rest);
    if (command == "prove") return run_prove(rest);
    if (command == "matrix") return run_matrix(rest);
    if (command == "certificate") return run_certificate(rest);
    if (command == "emit") return run_emit(rest);
    if (command == "check") return run_check(rest);
    if (command == "plan") return run_plan(rest);
    std::cerr << "kvlayout: unknown command \"" << command << "\"; expected one of: list, addr, prove, matrix, certificate, emit, check, plan (see kvlayout --help)\n";
    return kBadInput;
  } catch (const kvlayout::spec::SpecError& e) {
    std::cerr << "kvlayout " << command << ": error: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "kvlayout " << command << ": internal error: " << e.what() << "\n";
    return kInternal;
  }
}

#include "cli/dispatch.hpp"

#include <iostream>
#include <mutex>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"

#ifndef KVLAYOUT_VERSION
#define KVLAYOUT_VERSION "0"
#endif

namespace kvlayout::cli {
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
  report   a self-contained HTML report of a certificate (grid, details, backlog, graph, controls)
  graph    the translation graph of a certificate: exact components, routes, DOT or JSON

Run `kvlayout COMMAND --help` for a command's flags.

exit codes: 0 yes (exact, OK); 1 a well-formed question answered no (a grade short of exact, a verdict
            other than OK); 2 bad input; 3 unknown (solver limit); 4 internal error
)";

// The command itself; exceptions propagate to the caller, which decides how to report them.
int dispatch(const std::string& command, const std::vector<std::string>& rest) {
  if (command == "list") return run_list(rest);
  if (command == "addr") return run_addr(rest);
  if (command == "prove") return run_prove(rest);
  if (command == "matrix") return run_matrix(rest);
  if (command == "certificate") return run_certificate(rest);
  if (command == "emit") return run_emit(rest);
  if (command == "check") return run_check(rest);
  if (command == "plan") return run_plan(rest);
  if (command == "report") return run_report(rest);
  if (command == "graph") return run_graph(rest);
  std::cerr << "kvlayout: unknown command \"" << command
            << "\"; expected one of: list, addr, prove, matrix, certificate, emit, check, plan, report, graph (see kvlayout --help)\n";
  return kBadInput;
}

// run(), reporting the error it caught through `error` / `internal` as well as on std::cerr.
int run_reporting(const std::vector<std::string>& args, std::optional<spec::SpecError>* error, std::string* internal) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? kBadInput : kOk;
  }
  if (args[0] == "--version") {
    std::cout << "kvlayout " << KVLAYOUT_VERSION << "\n";
    return kOk;
  }
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    return dispatch(command, rest);
  } catch (const spec::SpecError& e) {
    std::cerr << "kvlayout " << command << ": error: " << e.what() << "\n";
    if (error) *error = e;
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "kvlayout " << command << ": internal error: " << e.what() << "\n";
    if (internal) *internal = e.what();
    return kInternal;
  }
}

// Swaps a stream's buffer for the scope, restoring it however the scope ends.
class Redirect {
 public:
  Redirect(std::ostream& stream, std::streambuf* to) : stream_(stream), saved_(stream.rdbuf(to)) {}
  ~Redirect() { stream_.rdbuf(saved_); }
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;

 private:
  std::ostream& stream_;
  std::streambuf* saved_;
};

}  // namespace

int run(const std::vector<std::string>& args) { return run_reporting(args, nullptr, nullptr); }

CapturedRun run_captured(const std::vector<std::string>& args) {
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> lock(one_at_a_time);
  std::ostringstream out, err;
  CapturedRun result;
  {
    Redirect o(std::cout, out.rdbuf());
    Redirect e(std::cerr, err.rdbuf());
    result.exit_code = run_reporting(args, &result.error, &result.internal_error);
  }
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace kvlayout::cli

#pragma once
// The command line as a function, so that the kvlayout executable and the Python package run the very
// same commands (one implementation of every check, message and JSON document).
#include <optional>
#include <string>
#include <vector>

#include "spec/error.hpp"

namespace kvlayout::cli {

// Runs `kvlayout ARGS...` (args without the program name) with output on std::cout / std::cerr, turning
// a SpecError into its one-line message and exit code 2, any other exception into exit code 4.
int run(const std::vector<std::string>& args);

// What one command run printed and returned, with the bad-input error it raised (if any) as found.
struct CapturedRun {
  int exit_code = 0;
  std::string out;                       // standard output (the --json document, a kernel, ...)
  std::string err;                       // standard error (notes, and the error line as the CLI prints it)
  std::optional<spec::SpecError> error;  // set when the command refused bad input (exit code 2)
  std::string internal_error;            // set when the command failed inside kvlayout (exit code 4)
};

// run() with std::cout and std::cerr captured into the result. One run at a time per process (the
// standard streams are process-wide): concurrent callers are serialised.
CapturedRun run_captured(const std::vector<std::string>& args);

}  // namespace kvlayout::cli

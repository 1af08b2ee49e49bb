#pragma once
// A problem in user input (a spec, a cache shape, a coordinate, a flag). It names where (file and JSON path),
// what was found and what was expected; the CLI turns it into one line on stderr and exit code 2.
#include <stdexcept>
#include <string>

namespace kvlayout::spec {

struct SpecError : std::runtime_error {
  std::string file;      // may be empty (a command-line argument)
  std::string path;      // JSON pointer inside the file, e.g. "/tensors/0/index/3"; may be empty
  std::string found;
  std::string expected;
  SpecError(std::string file, std::string path, std::string found, std::string expected);
};

}  // namespace kvlayout::spec

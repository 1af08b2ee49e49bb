#pragma once
// What every harness shares: the CLI's line between bad input and a bug, and the fuzz input as a file.
//
// The CLI (src/cli/main.cpp) turns spec::SpecError into exit 2 and every other exception into exit 4
// ("internal error"). A harness mirrors that line exactly: a SpecError is a normal answer to a bad input;
// anything else escaping (prove::InternalError, std::logic_error, std::bad_alloc, a Z3 exception, ...) is
// the exit-4 class and aborts, so libFuzzer records a crash with the input that caused it.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "spec/error.hpp"

namespace kvlayout::fuzz {

// Prints `stage` and what went wrong, then aborts. For answers no input may produce.
[[noreturn]] void fail(const char* stage, const std::string& what);
// The same for an escaped exception: its (demangled) type and message.
[[noreturn]] void fail(const char* stage, const std::exception& e);

// Runs f(); true when it returned, false when it threw spec::SpecError (bad input, exit 2).
// @post any other exception aborts through fail(stage, ...)
template <class F>
bool run_stage(const char* stage, F&& f) {
  try {
    f();
    return true;
  } catch (const spec::SpecError&) {
    return false;
  } catch (const std::exception& e) {
    fail(stage, e);
  } catch (...) {
    fail(stage, "an exception not derived from std::exception");
  }
}

// Writes the input to <per-process temp dir>/<stem>.json and returns the path. The loaders insist that a
// declaration's "name" equals its file's stem, so the stem is the first "name" string in the input when it
// is a plain file name (else "input"); otherwise almost every input would stop at that one check.
// The directory honours $TMPDIR (scripts/fuzz.sh points it at a folder it deletes afterwards).
std::string write_input(const std::uint8_t* data, std::size_t size);

// Removes the file write_input() returned (each run starts with an empty directory).
void remove_input(const std::string& path);

}  // namespace kvlayout::fuzz

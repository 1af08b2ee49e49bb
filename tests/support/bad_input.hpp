#pragma once
// Shared by the error tests: a small valid declaration to break one way at a time, and the contract every
// command keeps on bad input (exit 2, one line on stderr naming the file and the JSON path; never a crash,
// an internal error or a grade).
#include <initializer_list>
#include <string>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"

namespace kvlayout::test {

// vLLM FlashAttention NHD named "mine" (write it as mine.json), valid on every per-head cache shape.
spec::Json flash_nhd();

// A full coordinate of kv-heads on the small cache shape.
extern const char* const kCoord;

// Every command on any input: exits normally (no signal), never with an internal error (4); exit 2 says
// "kvlayout COMMAND: error: ..." in exactly one line on stderr and prints nothing on stdout.
void check_contract(const CommandResult& r);

// Runs `kvlayout ARGUMENTS` and requires exit 2 with every `parts` in its one-line message.
CommandResult expect_bad_input(const std::string& arguments, std::initializer_list<std::string> parts);

// Runs `kvlayout addr FILE --cache small COORD` on `text` written as mine.json and requires exit 2, a message
// naming mine.json, and every `parts`.
void expect_exit_2(const std::string& text, std::initializer_list<std::string> parts, const std::string& coord = kCoord);

}  // namespace kvlayout::test

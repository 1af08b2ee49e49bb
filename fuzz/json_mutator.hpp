#pragma once
// A structural mutator for JSON inputs (LLVMFuzzerCustomMutator): byte mutations of a JSON document mostly
// break its syntax and stop at the parser, so this one parses the document and makes one to three edits:
// a value replaced (a number by a boundary value, a neighbour or a multiple; an "0x..." address by one a
// few blocks off; anything by an address, a name, an expression or another type), a member or element
// deleted, an element duplicated, a member given another member's value.
#include <cstddef>
#include <cstdint>
#include <random>

namespace kvlayout::fuzz {

// Mutates the JSON document in data[skip, size) in place (the first `skip` bytes are kept).
// @post the new size, at most max_size; 0 when that part is not a JSON document nested at most
// spec::kMaxJsonDepth deep, or the result would not fit (the caller then mutates bytes instead).
std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size, std::size_t skip,
                        std::mt19937_64& rng);

}  // namespace kvlayout::fuzz

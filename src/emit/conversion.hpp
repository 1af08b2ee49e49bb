#pragma once
// Source text of the element conversion a NOT_EXACT kernel performs (the same rounding rules as
// layout/convert: IEEE round-to-nearest-even, float8_e4m3fn without infinity, saturating integers).
#include <string>

#include "spec/dtype.hpp"

namespace kvlayout::emit {

// Defines `kv_convert(uint32_t bits) -> uint32_t` from `from` to `to`; `qualifiers` e.g. "__host__ __device__".
std::string conversion_source(spec::DType from, spec::DType to, const std::string& qualifiers);

}  // namespace kvlayout::emit

#pragma once
// Exact 64-bit integer arithmetic: every operation either returns the mathematically exact result or throws
// ArithmeticError. Division and modulo are floor division and floor modulo (Python's // and %), the
// semantics of the layout language; C++'s truncating / and % are never used on declared values.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvlayout::expr {

struct ArithmeticError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::int64_t checked_add(std::int64_t a, std::int64_t b);
std::int64_t checked_sub(std::int64_t a, std::int64_t b);
std::int64_t checked_mul(std::int64_t a, std::int64_t b);
std::int64_t checked_neg(std::int64_t a);
// @pre b != 0 (else ArithmeticError)  @post q*b + r == a with r = floor_mod(a, b)
std::int64_t floor_div(std::int64_t a, std::int64_t b);
// @post 0 <= r < b for b > 0; b < r <= 0 for b < 0
std::int64_t floor_mod(std::int64_t a, std::int64_t b);
std::int64_t ceil_div(std::int64_t a, std::int64_t b);
bool is_pow2(std::int64_t a);

}  // namespace kvlayout::expr

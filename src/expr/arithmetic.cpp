#include "expr/arithmetic.hpp"

#include <limits>

namespace kvlayout::expr {
namespace {
[[noreturn]] void overflow(const char* op, std::int64_t a, std::int64_t b) {
  throw ArithmeticError("64-bit overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b));
}
}  // namespace

std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow("+", a, b);
  return r;
}
std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow("-", a, b);
  return r;
}
std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow("*", a, b);
  return r;
}
std::int64_t checked_neg(std::int64_t a) { return checked_sub(0, a); }

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0) throw ArithmeticError("division by zero in " + std::to_string(a) + " / 0");
  if (a == std::numeric_limits<std::int64_t>::min() && b == -1) overflow("/", a, b);
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) throw ArithmeticError("modulo by zero in " + std::to_string(a) + " % 0");
  if (b == -1) return 0;
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  if (b == 0) throw ArithmeticError("division by zero in ceil_div(" + std::to_string(a) + ", 0)");
  return checked_neg(floor_div(checked_neg(a), b));
}
bool is_pow2(std::int64_t a) { return a > 0 && (a & (a - 1)) == 0; }

}  // namespace kvlayout::expr

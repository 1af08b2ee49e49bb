#include <catch2/catch.hpp>
#include <limits>

#include "expr/arithmetic.hpp"

using namespace kvlayout::expr;

TEST_CASE("floor division and modulo follow Python semantics over a whole sign grid", "[expr][arithmetic]") {
  for (std::int64_t a = -20; a <= 20; ++a) {
    for (std::int64_t b = -7; b <= 7; ++b) {
      if (b == 0) continue;
      std::int64_t q = floor_div(a, b), r = floor_mod(a, b);
      INFO(a << " / " << b);
      CHECK(q * b + r == a);
      if (b > 0) CHECK((0 <= r && r < b));
      else CHECK((b < r && r <= 0));
      CHECK(ceil_div(a, b) == -floor_div(-a, b));
    }
  }
  CHECK(floor_div(-7, 2) == -4);
  CHECK(floor_mod(-7, 2) == 1);
  CHECK(ceil_div(37, 16) == 3);
  CHECK(ceil_div(32, 16) == 2);
}

TEST_CASE("overflow and division by zero throw instead of wrapping", "[expr][arithmetic]") {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  CHECK_THROWS_AS(checked_add(max, 1), ArithmeticError);
  CHECK_THROWS_AS(checked_sub(min, 1), ArithmeticError);
  CHECK_THROWS_AS(checked_mul(max / 2 + 1, 2), ArithmeticError);
  CHECK_THROWS_AS(checked_neg(min), ArithmeticError);
  CHECK_THROWS_AS(floor_div(min, -1), ArithmeticError);
  CHECK_THROWS_AS(floor_div(1, 0), ArithmeticError);
  CHECK_THROWS_AS(floor_mod(1, 0), ArithmeticError);
  CHECK_THROWS_AS(ceil_div(1, 0), ArithmeticError);
  CHECK(checked_mul(max / 2, 2) == max - 1);
  CHECK(floor_mod(min, -1) == 0);
}

TEST_CASE("is_pow2 accepts exactly the positive powers of two", "[expr][arithmetic]") {
  for (std::int64_t v = -4; v <= 1025; ++v) {
    bool expected = false;
    for (std::int64_t p = 1; p <= 1024; p *= 2) expected = expected || v == p;
    CHECK(is_pow2(v) == expected);
  }
}

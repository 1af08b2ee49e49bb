#include <catch2/catch.hpp>

#include "expr/evaluate.hpp"
#include "expr/parse.hpp"
#include "expr/print.hpp"
#include "expr/type.hpp"

using namespace kvlayout::expr;

namespace {
Expr bind_coords(const std::string& text) {
  return substitute(
      parse(text), [](const std::string& n) { return coord(n == "x" ? 0 : 1, n); },
      [](const std::string&) { return 0; });
}
}  // namespace

TEST_CASE("evaluation reads coordinates and table entries", "[expr][evaluate]") {
  std::int64_t coords[] = {37, 5};
  std::vector<std::int64_t> table = {4, 1, 3, 0, 2};
  Environment env{coords, [&](int, std::int64_t i) { return table.at(static_cast<std::size_t>(i)); }};
  CHECK(evaluate(bind_coords("t[x / 16] * 16 + x % 16"), env) == 3 * 16 + 5);
  CHECK(evaluate(bind_coords("x * y - 1"), env) == 184);
  CHECK(evaluate(bind_coords("x >= 16 && y < 8"), env) == 1);
}

TEST_CASE("&& and || short-circuit so a guard protects its right side", "[expr][evaluate]") {
  std::int64_t coords[] = {0, 0};
  Environment env{coords, nullptr};
  CHECK(evaluate(bind_coords("x != 0 && 10 / x > 1"), env) == 0);
  CHECK(evaluate(bind_coords("x == 0 || 10 / x > 1"), env) == 1);
  CHECK_THROWS_AS(evaluate(bind_coords("10 / x > 1"), env), ArithmeticError);
}

TEST_CASE("folding evaluates constant subtrees and reports their arithmetic errors", "[expr][evaluate]") {
  Expr e = fold(parse("ceil_div(37, 16) * 4"));
  REQUIRE(e->op == Op::Literal);
  CHECK(e->value == 12);
  CHECK_THROWS_AS(fold(parse("5 / (3 - 3)")), ArithmeticError);
  CHECK_THROWS_AS(fold(parse("4611686018427387904 * 2")), ArithmeticError);
  Expr partial = bind_coords("x + 2 * 3");
  REQUIRE(partial->op == Op::Add);
  CHECK(partial->args[1]->op == Op::Literal);
  CHECK(partial->args[1]->value == 6);
}

TEST_CASE("types separate integers from truth values", "[expr][type]") {
  CHECK(type_of(parse("a + b * 2")) == Type::Integer);
  CHECK(type_of(parse("a < b && is_pow2(c)")) == Type::Truth);
  CHECK(type_of(parse("t[a] + 1")) == Type::Integer);
  CHECK_THROWS_WITH(type_of(parse("a && b")), Catch::Contains("`a` is an integer but `&&` needs a truth value"));
  CHECK_THROWS_WITH(type_of(parse("(a < b) + 1")), Catch::Contains("is a truth value but `+` needs an integer"));
  CHECK_THROWS_AS(type_of(parse("t[a < b]")), TypeError);
  CHECK_THROWS_AS(type_of(parse("!a")), TypeError);
}

TEST_CASE("folding drops identities but never an operand's error", "[expr][evaluate]") {
  CHECK(to_string(bind_coords("x / 1 + y * 1 - 0")) == "x + y");
  CHECK(bind_coords("x % 1")->op == Op::Literal);
  // t[x] % 1 would be 0 for any in-table read, but a read outside the table must still be reported.
  Expr kept = bind_coords("t[x] % 1");
  CHECK(kept->op == Op::Mod);
  Expr guarded = bind_coords("(10 / (x - 3)) % 1");
  CHECK(guarded->op == Op::Mod);
}

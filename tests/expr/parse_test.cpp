#include <catch2/catch.hpp>

#include "expr/evaluate.hpp"
#include "expr/parse.hpp"
#include "expr/print.hpp"

using namespace kvlayout::expr;

namespace {
std::int64_t eval(const std::string& text) { return fold(parse(text))->value; }
}  // namespace

TEST_CASE("precedence and associativity follow C", "[expr][parse]") {
  CHECK(eval("2 + 3 * 4") == 14);
  CHECK(eval("(2 + 3) * 4") == 20);
  CHECK(eval("20 - 5 - 3") == 12);
  CHECK(eval("64 / 4 / 2") == 8);
  CHECK(eval("7 % 4 * 3") == 9);
  CHECK(eval("-3 * -2") == 6);
  CHECK(eval("1 + 2 == 3 && 4 < 5 || 0 > 1") == 1);
  CHECK(eval("!(1 == 2)") == 1);
  CHECK(eval("1 <= 1 && 2 >= 3") == 0);
  CHECK(eval("1 != 2") == 1);
  CHECK(eval("min(3, 9) + max(3, 9) + ceil_div(37, 16)") == 15);
  CHECK(eval("is_pow2(64) && !is_pow2(48)") == 1);
  CHECK(eval("-7 / 2") == -4);
  CHECK(eval("-7 % 2") == 1);
}

TEST_CASE("names and table lookups parse into their nodes", "[expr][parse]") {
  Expr e = parse("block_table[token / block_size] * 16");
  REQUIRE(e->op == Op::Mul);
  REQUIRE(e->args[0]->op == Op::Lookup);
  CHECK(e->args[0]->name == "block_table");
  CHECK(e->args[0]->args[0]->op == Op::Div);
  CHECK(e->args[0]->args[0]->args[0]->op == Op::Name);
  CHECK(e->args[0]->args[0]->args[0]->name == "token");
}

TEST_CASE("printing then parsing gives an expression with the same value", "[expr][print]") {
  const char* texts[] = {"a - (b - c)", "(a + b) * c", "a / (b * c)", "-(a + b)", "a % b % c",
                         "!(a < b) || a == b && c != 0", "min(a, b) * ceil_div(c, a + 1)", "t[a + b] * -c"};
  for (const char* text : texts) {
    Expr e = parse(text);
    std::string printed = to_string(e);
    INFO(text << " printed as " << printed);
    Expr again = parse(printed);
    std::int64_t values[] = {7, -3, 5};
    Environment env{std::span<const std::int64_t>(values, 3), [](int, std::int64_t entry) { return entry * 3 + 1; }};
    auto bind = [](const Expr& x) {
      return substitute(
          x, [](const std::string& n) { return coord(n == "a" ? 0 : n == "b" ? 1 : 2, n); }, [](const std::string&) { return 0; });
    };
    CHECK(evaluate(bind(e), env) == evaluate(bind(again), env));
    CHECK(to_string(again) == printed);
  }
}

TEST_CASE("malformed expressions are rejected with a column", "[expr][parse][errors]") {
  struct Case {
    const char* text;
    std::size_t column;
    const char* message_part;
  };
  const Case cases[] = {
      {"token +", 8, "ended"},
      {"(token", 7, "expected `)`"},
      {"token $ 2", 7, "unexpected `$`"},
      {"2token", 2, "runs into a name"},
      {"foo(1)", 1, "unknown function `foo`"},
      {"min(1)", 1, "takes 2 argument(s)"},
      {"a = b", 3, "unexpected `=`"},
      {"99999999999999999999", 1, "64 bits"},
      {"t[1", 4, "expected `]`"},
      {"", 1, "ended"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    try {
      parse(c.text);
      FAIL("parsed");
    } catch (const ParseError& e) {
      CHECK(e.column == c.column);
      CHECK_THAT(e.what(), Catch::Contains(c.message_part));
    }
  }
}

TEST_CASE("deep nesting is refused with a message, not a stack overflow", "[expr][parse][errors]") {
  std::string deep(100000, '(');
  CHECK_THROWS_WITH(parse(std::string(300, '(') + "1"), Catch::Contains("nesting deeper than"));
  CHECK_THROWS_WITH(parse(std::string(300, '-') + "1"), Catch::Contains("nesting deeper than"));
  CHECK_THROWS_WITH(parse(deep + "1"), Catch::Contains("longer than"));
  CHECK(fold(parse(std::string(50, '(') + "1" + std::string(50, ')')))->value == 1);
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  CHECK_THROWS_WITH(parse(chain), Catch::Contains("longer than 4096 characters"));
}

// libFuzzer harness: the expression parser (src/expr/parse.hpp) on arbitrary text, and what every stage does
// next with a parsed expression: type it, print it, bind its names and evaluate it.
//
// Normal answers to bad text: ParseError (the loader turns it into SpecError, exit 2), TypeError,
// ArithmeticError. Bugs, which abort: any other exception, and a printed expression that does not parse
// back to the same tree (print.hpp promises parse(to_string(e)) == e).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "expr/evaluate.hpp"
#include "expr/expr.hpp"
#include "expr/parse.hpp"
#include "expr/print.hpp"
#include "expr/type.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace kvlayout;

// Longer than parse() accepts: a printed form may add spaces and parentheses to an input at the limit.
constexpr std::size_t kMaxPrinted = 4096;

void check(std::string_view text) {
  expr::Expr e;
  try {
    e = expr::parse(text);
  } catch (const expr::ParseError&) {
    return;
  }
  try {
    expr::type_of(e);
  } catch (const expr::TypeError&) {
    // Still worth evaluating: the loader rejects it, but printing and binding must not crash on it.
  }

  const std::string printed = expr::to_string(e);
  if (printed.size() <= kMaxPrinted) {
    expr::Expr again;
    try {
      again = expr::parse(printed);
    } catch (const expr::ParseError& p) {
      kvlayout::fuzz::fail("print", "`" + printed + "` does not parse back: " + p.what());
    }
    if (!expr::same(e, again)) kvlayout::fuzz::fail("print", "`" + printed + "` parses back to a different tree");
  }

  // Every name a small value derived from its spelling, every table entry i -> 3 * i + 1, then evaluate at
  // one coordinate: exact arithmetic throws ArithmeticError, never anything else.
  try {
    auto resolve = [](const std::string& n) {
      return expr::literal(static_cast<std::int64_t>(std::hash<std::string>{}(n) % 19) - 3);
    };
    auto table = [](const std::string&) { return 0; };
    expr::Expr bound = expr::substitute(e, resolve, table);
    const std::int64_t coords[] = {0};
    auto entry = [](int, std::int64_t i) { return expr::checked_add(expr::checked_mul(3, i), 1); };
    expr::evaluate(bound, expr::Environment{coords, entry});
  } catch (const expr::ArithmeticError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check(text);
  } catch (const std::exception& e) {
    kvlayout::fuzz::fail("expression", e);
  }
  return 0;
}

// A user expression binds like a declaration's own: coordinates, parameters, tables, extra variables;
// and every problem is bad input naming where it was written.
#include <catch2/catch.hpp>

#include "expr/evaluate.hpp"
#include "layout/bind_expression.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/error.hpp"

using namespace kvlayout;

TEST_CASE("bind_expression resolves coordinates, parameters, tables and extras", "[layout][bind_expression]") {
  layout::BoundLayout b = test::bind_named("vllm-flash-nhd", "small");
  expr::Expr scope = layout::bind_expression(b, "token < block_size && head == 1", "", "--scope", true);
  std::vector<std::int64_t> coord(b.coord_names.size(), 0);
  coord[static_cast<std::size_t>(b.coord_index("head"))] = 1;
  expr::Environment env{coord, [](int, std::int64_t e) { return e; }};
  CHECK(expr::evaluate(scope, env) == 1);
  coord[static_cast<std::size_t>(b.coord_index("token"))] = b.values.at("block_size");
  CHECK(expr::evaluate(scope, env) == 0);

  expr::Expr offset = layout::bind_expression(b, "block_table[b] * 2 + layer", "plan.json", "/families/0", false, {"b"});
  std::vector<std::int64_t> with_extra(b.coord_names.size() + 1, 0);
  with_extra.back() = 3;
  expr::Environment env2{with_extra, [](int, std::int64_t e) { return e + 100; }};
  CHECK(expr::evaluate(offset, env2) == 206);
}

TEST_CASE("bind_expression rejects what it cannot bind, naming the place", "[layout][bind_expression]") {
  layout::BoundLayout b = test::bind_named("vllm-flash-nhd", "small");
  auto rejects = [&](const std::string& text, bool truth, const std::string& fragment) {
    INFO(text);
    try {
      layout::bind_expression(b, text, "plan.json", "/scope", truth);
      FAIL("accepted");
    } catch (const spec::SpecError& e) {
      CHECK(e.path == "/scope");
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  rejects("token <", true, "token <");
  rejects("tokens < 3", true, "tokens");
  rejects("token + 1", true, "token + 1");          // an integer where a truth value is wanted
  rejects("token < 3", false, "token < 3");         // and the reverse
  rejects("nope[token] == 1", true, "nope");
  rejects("token < 9223372036854775807 + 1", true, "9223372036854775807");
}

// The HTML report: one square per row, legend counts, details for every square, escaping, both graph
// layouts. (The browser test, tests/report/browser_test.py, renders it in headless Chromium.)
#include <catch2/catch.hpp>

#include "report/graph_picture.hpp"
#include "report/html_report.hpp"

using namespace kvlayout;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the report has a square and a details section per row, and legend counts per grade", "[report][html]") {
  auto c = report::read_certificate(std::string(KVLAYOUT_SOURCE_DIR) + "/proofs/certificate.json");
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto g = report::build_graph(c, &catalog);
  const std::string html = report::html_report(c, g, report::draw_graph(g, false));
  CHECK(count(html, "<a class=\"sq ") == c.rows.size());
  CHECK(count(html, "<section class=detail id=\"r") == c.rows.size());
  const auto& grades = c.document["counts"]["grades"];
  for (auto it = grades.begin(); it != grades.end(); ++it)
    CHECK(count(html, "data-grade=\"" + it.key() + "\" data-count=\"" + it.value().dump() + "\"") == 1);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);  // nothing fetched: styles, scripts and the graph are inline
  CHECK_THAT(html, Catch::Contains("Capability backlog") && Catch::Contains("Mutation score") && Catch::Contains("spec hashes"));
  CHECK_THAT(html, Catch::Contains("built-in circular layout"));
  // Evidence: one badge per observed layout (in its row header), and the Evidence section's table lists them.
  std::size_t observed = 0;
  for (auto it = c.document["evidence"].begin(); it != c.document["evidence"].end(); ++it)
    observed += it.value()["evidence"] == "observed";
  CHECK(observed == c.document["counts"]["evidence"]["observed_layouts"].get<std::size_t>());
  CHECK(observed > 0);
  CHECK(count(html, "<span class=obs title=\"observed: ") == observed);
  CHECK_THAT(html, Catch::Contains("Evidence: observed and declared layouts") &&
                       Catch::Contains("<td><code>vllm==0.33.0</code></td><td>geometry + bytes</td>"));
}

TEST_CASE("names in the report are escaped", "[report][html]") {
  spec::Json doc = {{"rows", {{{"source", "a<b"}, {"target", "a<b"}, {"cache", "small"}, {"grade", "EXACT_BYTE"}, {"reason", "exact"},
                               {"unblocked_by", nullptr}}}}};
  auto c = report::view_certificate(doc, "t.json");
  auto g = report::build_graph(c, nullptr);
  const std::string html = report::html_report(c, g, report::draw_graph(g, false));
  CHECK(html.find("a<b") == std::string::npos);
  CHECK_THAT(html, Catch::Contains("a&lt;b"));
}

// The translation graph: components, routes and the composition control on small certificates written
// here (each with the case that must fail), and on the committed certificate.
#include <catch2/catch.hpp>

#include <fstream>

#include "report/backlog.hpp"
#include "report/certificate_view.hpp"
#include "report/translation_graph.hpp"
#include "spec/error.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

// A certificate of layouts a..d with the given rows {source, target, grade, capability}.
report::CertificateView certificate(const std::vector<std::vector<std::string>>& rows,
                                    const std::vector<std::vector<std::string>>& classes = {}) {
  spec::Json doc = {{"rows", spec::Json::array()}, {"equivalence_classes", spec::Json::array()}};
  for (const auto& r : rows) {
    spec::Json row = {{"source", r[0]}, {"target", r[1]}, {"cache", "small"}, {"grade", r[2]}, {"reason", "x"}};
    row["unblocked_by"] = r.size() > 3 ? spec::Json(r[3]) : spec::Json(nullptr);
    doc["rows"].push_back(row);
  }
  for (const auto& c : classes) doc["equivalence_classes"].push_back(c);
  return report::view_certificate(doc, "test.json");
}

std::vector<std::string> names(const report::TranslationGraph& g, const std::vector<report::VertexId>& vs) {
  std::vector<std::string> out;
  for (auto v : vs) out.push_back(g.graph[v].name);
  return out;
}

}  // namespace

TEST_CASE("exact components are the strong components of the exact moves", "[report][graph]") {
  auto c = certificate({{"a", "b", "EXACT_BYTE"}, {"b", "a", "EXACT_TOKEN"}, {"b", "c", "EXACT_BYTE"}, {"c", "b", "REFUSED"},
                        {"c", "d", "SUBSET"}, {"d", "c", "EXACT_BYTE"}});
  auto g = report::build_graph(c, nullptr);
  CHECK(boost::num_vertices(g.graph) == 4);
  CHECK(boost::num_edges(g.graph) == 6);
  auto components = report::exact_components(g);
  REQUIRE(components.size() == 3);
  CHECK(names(g, components[0]) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("proven-equal declarations are one vertex, and their rows one edge", "[report][graph]") {
  auto c = certificate({{"a", "a2", "EXACT_BYTE"}, {"a", "b", "EXACT_BYTE"}, {"a2", "b", "EXACT_BYTE"}}, {{"a", "a2"}, {"b"}});
  auto g = report::build_graph(c, nullptr);
  CHECK(boost::num_vertices(g.graph) == 2);
  CHECK(boost::num_edges(g.graph) == 1);  // a->a2 is inside a class; a2->b repeats a->b
  CHECK(g.vertex_of.at("a") == g.vertex_of.at("a2"));
}

TEST_CASE("the route takes any number of exact steps before one non-exact step", "[report][graph]") {
  // a -> d directly is SUBSET; a -> b -> c -> d is exact all the way.
  auto c = certificate({{"a", "d", "SUBSET", "gather"}, {"a", "b", "EXACT_BYTE"}, {"b", "c", "EXACT_TOKEN"}, {"c", "d", "EXACT_BYTE"},
                        {"d", "e", "REFUSED", "decompress"}});
  auto g = report::build_graph(c, nullptr);
  auto r = report::fewest_non_exact_route(g, "a", "d");
  REQUIRE(r);
  CHECK(r->non_exact_steps == 0);
  CHECK(r->steps.size() == 3);
  auto to_e = report::fewest_non_exact_route(g, "a", "e");
  REQUIRE(to_e);
  CHECK(to_e->non_exact_steps == 1);
  CHECK(to_e->steps.back().capability == "decompress");
  CHECK_FALSE(report::fewest_non_exact_route(g, "e", "a"));  // no row leaves e
  CHECK_THROWS_AS(report::fewest_non_exact_route(g, "a", "nope"), spec::SpecError);
}

TEST_CASE("the composition control finds A->B->C EXACT_BYTE without A->C EXACT_BYTE", "[report][graph]") {
  auto good = certificate({{"a", "b", "EXACT_BYTE"}, {"b", "c", "EXACT_BYTE"}, {"a", "c", "EXACT_BYTE"}, {"c", "a", "EXACT_TOKEN"}});
  CHECK(report::composition_violations(report::build_graph(good, nullptr)).empty());
  // The control that must fail: the same rows with A->C downgraded, and with A->C missing.
  auto bad = certificate({{"a", "b", "EXACT_BYTE"}, {"b", "c", "EXACT_BYTE"}, {"a", "c", "EXACT_TOKEN"}});
  auto v = report::composition_violations(report::build_graph(bad, nullptr));
  REQUIRE(v.size() == 1);
  CHECK((v[0].a == "a" && v[0].b == "b" && v[0].c == "c" && v[0].ac_grade == "EXACT_TOKEN"));
  auto missing = certificate({{"a", "b", "EXACT_BYTE"}, {"b", "c", "EXACT_BYTE"}});
  CHECK(report::composition_violations(report::build_graph(missing, nullptr)).at(0).ac_grade == "(no row)");
}

TEST_CASE("the committed certificate composes, and its graph covers every class", "[report][graph]") {
  auto c = report::read_certificate(std::string(KVLAYOUT_SOURCE_DIR) + "/proofs/certificate.json");
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto g = report::build_graph(c, &catalog);
  CHECK(boost::num_vertices(g.graph) == c.classes.size());
  CHECK(report::composition_violations(g).empty());
  // vLLM's and SGLang's per-head pools exchange caches exactly; the MLA latent is its own component.
  CHECK(g.vertex_of.count("vllm-flash-nhd") == 1);
  for (const auto& comp : report::exact_components(g)) {
    auto n = names(g, comp);
    const bool has_vllm = std::find(n.begin(), n.end(), "vllm-flash-nhd") != n.end();
    if (has_vllm) CHECK(std::find(n.begin(), n.end(), "sglang-mha") != n.end());
    if (has_vllm) CHECK(std::find(n.begin(), n.end(), "vllm-mla") == n.end());
  }
  // Exact edges carry the planned kernel's cost: vLLM NHD -> HND moves 256-byte head rows (128 bf16).
  auto [e, found] = boost::edge(g.vertex_of.at("vllm-flash-nhd"), g.vertex_of.at("vllm-flash-hnd"), g.graph);
  REQUIRE(found);
  REQUIRE(g.graph[e].cost);
  CHECK(g.graph[e].cost->shortest_run_bytes == 256);
  auto legacy = boost::edge(g.vertex_of.at("vllm-paged-legacy"), g.vertex_of.at("vllm-flash-nhd"), g.graph);
  REQUIRE(legacy.second);
  REQUIRE(g.graph[legacy.first].cost);
  CHECK(g.graph[legacy.first].cost->transposed_cells >= 1);  // the token-fastest V cache
}

TEST_CASE("a file that is not a certificate is bad input naming the JSON path", "[report][graph]") {
  test::TempDir dir;
  const std::string file = (dir.path() / "c.json").string();
  std::ofstream(file) << R"({"rows": [{"source": "a", "target": "b", "cache": "small", "grade": "GREAT", "reason": "x"}]})";
  try {
    report::read_certificate(file);
    FAIL("no SpecError");
  } catch (const spec::SpecError& e) {
    CHECK(e.path == "/rows/0/grade");
    CHECK_THAT(e.found, Catch::Contains("GREAT"));
  }
  std::ofstream(file) << R"({"no_rows": []})";
  CHECK_THROWS_AS(report::read_certificate(file), spec::SpecError);
}

TEST_CASE("the backlog counts every non-exact row once, by the capability's head", "[report][backlog]") {
  CHECK(report::capability_head("gather the ranks of x (tp_rank 1: heads 4..7): y needs heads") == "gather the ranks of x (tp_rank 1: heads 4..7)");
  CHECK(report::capability_head("keep the scales (source: fp32; target: none)") == "keep the scales (source: fp32; target: none)");
  std::vector<report::BacklogRow> rows = {{"a", "b", prove::Grade::Refused, "gather x: a needs 1"},
                                          {"c", "b", prove::Grade::Refused, "gather x: c needs 2"},
                                          {"a", "d", prove::Grade::NotExact, "keep scales"},
                                          {"a", "e", prove::Grade::ExactByte, ""},
                                          {"e", "a", prove::Grade::Subset, ""}};
  auto items = report::capability_backlog(rows);
  REQUIRE(items.size() == 3);
  CHECK(items[0].capability == "gather x");
  CHECK(items[0].rows.size() == 2);
  CHECK(items[0].grades.at("REFUSED") == 2);
  std::size_t total = 0;
  for (const auto& i : items) total += i.rows.size();
  CHECK(total == 4);  // the exact row is not in the backlog
  CHECK_THAT(report::format_backlog(items), Catch::Contains("   2 pairs (REFUSED 2): gather x"));
}

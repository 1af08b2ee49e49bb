#include <catch2/catch.hpp>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout list --json lists every declaration with its citation", "[cli][list]") {
  auto r = run_kvlayout("list --json");
  REQUIRE(r.exit_code == 0);
  Json list = Json::parse(r.out);
  REQUIRE(list.is_array());
  CHECK(list.size() == 64);
  int engines = 0;
  for (const auto& item : list) {
    INFO(item.dump());
    for (const char* field : {"name", "engine", "content", "dtype", "control", "cite", "file"}) CHECK(item.contains(field));
    if (item["control"].get<bool>()) continue;
    ++engines;
    const Json& cite = item["cite"];
    CHECK(cite["repo"].is_string());
    CHECK(cite["path"].is_string());
    CHECK(cite["symbol"].is_string());
    CHECK((cite.contains("commit") || cite.contains("version")));
    // Observed: what ran is what the citation pins.
    CHECK(item["evidence"] == (item["observed"].is_null() ? "declared" : "observed"));
    if (!item["observed"].is_null()) CHECK(item["observed"]["package"] == cite["version"]);
  }
  CHECK(engines == 60);
}

TEST_CASE("kvlayout list prints a table with one row per declaration", "[cli][list]") {
  auto r = run_kvlayout("list");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("vllm-flash-nhd ") && Catch::Contains("vllm-project/vllm@5704f34f") &&
                        Catch::Contains("64 layouts"));
  CHECK_THAT(r.out, Catch::Contains("broken-collide") && Catch::Contains("control"));
}

TEST_CASE("kvlayout list reads another specs directory and reports a bad declaration in it", "[cli][list][errors]") {
  auto r = run_kvlayout("list --specs /no/such/dir");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("/no/such/dir") && Catch::Contains("no such directory"));
}

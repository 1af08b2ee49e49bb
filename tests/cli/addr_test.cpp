#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "spec/json_node.hpp"
#include "support/run_command.hpp"

using kvlayout::spec::Json;
using kvlayout::test::run_kvlayout;

TEST_CASE("kvlayout addr --json gives tensor, instance, element and byte offset", "[cli][addr]") {
  auto r = run_kvlayout("addr vllm-flash-nhd --cache small layer=1 kv=1 token=7 head=2 dim=5 --json");
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["tensor"] == "kv_cache");
  CHECK(j["instance"] == 1);
  // ((kv*NB + b)*BS + o)*H*D + h*D + d with NB 5, BS 16, H 4, D 16
  CHECK(j["offset"] == ((1 * 5 + 0) * 16 + 7) * 64 + 2 * 16 + 5);
  CHECK(j["byte_offset"] == 2 * j["offset"].get<std::int64_t>());
}

TEST_CASE("kvlayout addr follows --table and accepts kv=K|V", "[cli][addr]") {
  auto r = run_kvlayout("addr vllm-flash-hnd --cache small --table block_table=2,0,1,4,3 layer=0 kv=V token=3 head=1 dim=0 --json");
  REQUIRE(r.exit_code == 0);
  // HND: ((kv*NB + b)*H + h)*BS*D + o*D + d, block 0 -> physical 2
  CHECK(Json::parse(r.out)["offset"] == ((1 * 5 + 2) * 4 + 1) * 256 + 3 * 16);
  r = run_kvlayout("addr vllm-flash-nhd --cache small layer=0 kv=K token=3 head=1 dim=0");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("(layer 0, K, token 3, head 1, dim 0)") && Catch::Contains("element  208"));
}

TEST_CASE("kvlayout addr takes a layout and a cache by path", "[cli][addr]") {
  std::string specs = KVLAYOUT_SPECS_DIR;
  auto r = run_kvlayout("addr " + specs + "/engines/vllm-mla.json --cache " + specs +
                        "/caches/deepseek-v3.json layer=60 token=131071 latent=575 --json");
  REQUIRE(r.exit_code == 0);
  CHECK(Json::parse(r.out)["offset"] == (8191LL * 16 + 15) * 576 + 575);
}

TEST_CASE("kvlayout addr: a position the layout does not hold answers held false with exit 1", "[cli][addr]") {
  auto r = run_kvlayout("addr vllm-flash-nhd-tp2-r0 --cache small layer=0 kv=0 token=0 head=3 dim=0 --json");
  CHECK(r.exit_code == 1);
  CHECK(Json::parse(r.out) == Json{{"held", false}});
  r = run_kvlayout("addr vllm-flash-nhd-tp2-r0 --cache small layer=0 kv=0 token=0 head=3 dim=0");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("is not held"));
}

TEST_CASE("kvlayout addr: an out-of-bounds address is reported with exit 1", "[cli][addr]") {
  auto r = run_kvlayout("addr broken-oob --cache small layer=0 kv=0 token=15 head=0 dim=0 --json");
  CHECK(r.exit_code == 1);
  Json j = Json::parse(r.out);
  CHECK(j["in_bounds"] == false);
  CHECK_THAT(j["violation"].get<std::string>(), Catch::Contains("outside [0, 16)"));
}

TEST_CASE("every command answers --help with exit 0", "[cli]") {
  for (const char* cmd : {"--help", "list --help", "addr --help"}) {
    auto r = run_kvlayout(cmd);
    INFO(cmd);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("usage: kvlayout"));
  }
  CHECK(run_kvlayout("").exit_code == 2);
  auto r = run_kvlayout("frobnicate");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown command \"frobnicate\""));
}

TEST_CASE("kvlayout addr --all: every position's address, row-major, agreeing with the one-position form", "[cli][addr]") {
  auto r = run_kvlayout("addr vllm-flash-hnd --cache small --table block_table=2,0,1,4,3 --all --json");
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["coords"] == Json{"layer", "kv", "token", "head", "dim"});
  CHECK(j["extents"] == Json{2, 2, 67, 4, 16});
  CHECK(j["tensors"] == Json{"kv_cache"});
  CHECK(j["element_bytes"] == 2);
  REQUIRE(j["addresses"].size() == 2 * 2 * 67 * 4 * 16);
  CHECK(j["held"] == 2 * 2 * 67 * 4 * 16);
  // (layer 0, V, token 3, head 1, dim 0): row-major position ((0*2 + 1)*67 + 3)*64 + 16.
  const Json& a = j["addresses"][((0 * 2 + 1) * 67 + 3) * 64 + 16];
  CHECK(a == Json{0, 0, 2 * (((1 * 5 + 2) * 4 + 1) * 256 + 3 * 16)});
  // Every address distinct: the declaration is injective on the small cache.
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> seen;
  for (const auto& x : j["addresses"]) seen.insert({x[0].get<std::int64_t>(), x[1].get<std::int64_t>(), x[2].get<std::int64_t>()});
  CHECK(seen.size() == j["addresses"].size());
}

TEST_CASE("kvlayout addr --all: positions a layout does not hold are null, an out-of-bounds one fails naming it", "[cli][addr]") {
  auto r = run_kvlayout("addr vllm-flash-nhd-tp2-r0 --cache small --all --json");
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["held"] == 2 * 2 * 67 * 2 * 16);  // heads 0 and 1 of 4
  CHECK(j["addresses"][3 * 16].is_null());   // (layer 0, K, token 0, head 3, dim 0)
  r = run_kvlayout("addr broken-oob --cache small --all --json");
  CHECK(r.exit_code == 1);
  j = Json::parse(r.out);
  CHECK(j["in_bounds"] == false);
  CHECK_THAT(j["violation"].get<std::string>(), Catch::Contains("token"));
  r = run_kvlayout("addr vllm-flash-nhd --cache small --all layer=0");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("either COORD... or --all"));
  r = run_kvlayout("addr vllm-flash-nhd --cache llama-3.1-8b --all --json");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("at most 2097152"));
}

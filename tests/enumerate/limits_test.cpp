// The enumeration limits: a valid layout too large to enumerate on a small shape (finding 12: an explicit
// stride of 2^40) is bound but never allocated, and a pair with it is not cross-checked; a shape with too
// many positions to enumerate is bad input.
#include <catch2/catch.hpp>

#include "enumerate/cross_check.hpp"
#include "enumerate/limits.hpp"
#include "layout/layout_fixture.hpp"

using namespace kvlayout;

namespace {

spec::Json huge_stride() {
  spec::Json d = test::flash_nhd_declaration();
  d["tensors"][0]["strides"] = spec::Json::array({"num_blocks * block_size * num_kv_heads * head_size",
                                                  "block_size * num_kv_heads * head_size", "num_kv_heads * head_size",
                                                  "head_size", 1099511627776});
  return d;
}

}  // namespace

TEST_CASE("limits: storage bytes are every tensor instance's size times the element bytes", "[enumerate][limits]") {
  test::TempDir dir;
  auto b = test::bind_inline(dir, test::flash_nhd_declaration(), test::small_cache());
  // 2 layers x (2 x 5 blocks x 16 x 4 heads x 16) bf16 elements.
  CHECK(enumerate::storage_bytes(b) == 2 * (2 * 5 * 16 * 4 * 16) * 2);
  CHECK_FALSE(enumerate::too_large(b));
}

TEST_CASE("limits: a huge allocation on small is too large, never allocated, and its pairs are not cross-checked",
          "[enumerate][limits]") {
  test::TempDir dir;
  auto small = test::small_cache();
  spec::Json h = huge_stride(), p = test::flash_nhd_declaration();
  h["name"] = "huge";
  p["name"] = "plain";
  auto huge = spec::load_layout(dir.write("huge.json", h.dump()));
  auto plain = spec::load_layout(dir.write("plain.json", p.dump()));
  auto e = enumerate::enumerate_layout(huge, small);
  CHECK(e.bound->fits());
  CHECK_FALSE(e.enumerated());
  CHECK(e.maps.empty());
  CHECK_THAT(e.too_large, Catch::Contains("huge on small allocates"));
  CHECK_THAT(e.too_large, Catch::Contains("bytes of storage, over the enumeration limit of 67108864"));
  for (bool forward : {true, false}) {
    auto other = enumerate::enumerate_layout(plain, small);
    auto cross = forward ? enumerate::cross_check(e, other) : enumerate::cross_check(other, e);
    CHECK_FALSE(cross.checked);
    CHECK(cross.not_checked == e.too_large);
    CHECK(cross.positions_checked == 0);
    CHECK(cross.grade == prove::Grade::Unknown);
    CHECK(cross.findings.empty());
  }
}

TEST_CASE("limits: too many positions is too large too, and a shape that has them is bad input", "[enumerate][limits]") {
  test::TempDir dir;
  spec::CacheShape big = test::small_cache();
  big.params["num_tokens"] = 1 << 20;  // 2 x 2 x 2^20 x 4 x 16 positions
  auto b = test::bind_inline(dir, test::flash_nhd_declaration(), big);
  REQUIRE(b.fits());
  auto why = enumerate::too_large(b);
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("268435456 positions, over the enumeration limit of 2097152"));
  // The positions are the shape's doing (any per-head layout has as many there): the shape is refused.
  auto decl = spec::load_layout(dir.write("case.json", test::flash_nhd_declaration().dump()));
  CHECK_THROWS_WITH(enumerate::enumerate_layout(decl, big), Catch::Contains("at most 2097152 positions per layout"));
}

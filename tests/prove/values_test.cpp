// The values obligation over element-type pairs: exhaustive for <= 16-bit sources, Z3 floating point for
// fp32, each counterexample re-checked by the software conversion.
#include <catch2/catch.hpp>

#include "layout/convert.hpp"
#include "prove/prove_fixture.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;
using spec::DType;

namespace {

std::shared_ptr<const spec::Layout> with_dtype(DType t) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto copy = std::make_shared<spec::Layout>(*spec::load_layout(catalog.find_layout("hf-dynamic").string()));
  copy->dtype = t;
  copy->name = "hf-dynamic-" + spec::dtype_name(t);
  return copy;
}

const prove::ObligationResult& values(DType from, DType to) {
  static std::vector<prove::Proof> keep;
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  keep.push_back(prove::prove(with_dtype(from), with_dtype(to), spec::load_cache(catalog.find_cache("small").string())));
  return *test::find_obligation(keep.back(), "values", prove::Side::Pair);
}

}  // namespace

TEST_CASE("widening conversions are exact: bf16 -> fp32, fp16 -> fp32, fp8 -> bf16, int8 -> fp16", "[prove][values]") {
  for (auto [from, to] : {std::pair{DType::bf16, DType::fp32}, {DType::fp16, DType::fp32}, {DType::fp8_e4m3, DType::bf16},
                          {DType::fp8_e4m3, DType::fp16}, {DType::fp8_e5m2, DType::fp16}, {DType::int8, DType::fp16},
                          {DType::uint8, DType::bf16}, {DType::bf16, DType::bf16}}) {
    INFO(spec::dtype_name(from) << " -> " << spec::dtype_name(to));
    const auto& r = values(from, to);
    CHECK(r.status == prove::Status::Proved);
    CHECK_FALSE(r.counterexample.has_value());
  }
}

TEST_CASE("narrowing conversions are not exact, with a value that really changes", "[prove][values]") {
  for (auto [from, to] : {std::pair{DType::fp32, DType::bf16}, {DType::fp32, DType::fp16}, {DType::fp32, DType::fp8_e4m3},
                          {DType::fp32, DType::fp8_e5m2}, {DType::fp32, DType::int8}, {DType::bf16, DType::fp16},
                          {DType::fp16, DType::bf16}, {DType::bf16, DType::fp8_e4m3}, {DType::bf16, DType::fp8_e5m2},
                          {DType::fp16, DType::fp8_e4m3}, {DType::fp8_e5m2, DType::fp8_e4m3}, {DType::fp16, DType::int8},
                          {DType::uint8, DType::int8}}) {
    INFO(spec::dtype_name(from) << " -> " << spec::dtype_name(to));
    const auto& r = values(from, to);
    REQUIRE(r.status == prove::Status::Refuted);
    CHECK(r.reason == prove::Reason::LossyValues);
    REQUIRE(r.counterexample->value);
    const auto& v = *r.counterexample->value;
    CHECK(v.source_type == from);
    CHECK(v.target_type == to);
    std::uint32_t back = layout::convert(to, from, layout::convert(from, to, v.source_bits));
    CHECK(back == v.round_trip_bits);
    CHECK(back != v.source_bits);
    CHECK_FALSE(layout::is_nan(from, v.source_bits));
    if (from == DType::fp32) CHECK(r.method == "z3 floating point");
    else CHECK_THAT(r.method, Catch::StartsWith("exhaustive"));
  }
}

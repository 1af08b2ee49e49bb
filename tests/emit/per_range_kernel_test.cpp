// Emitted CPU kernels (planned and naive) into and out of pipeline-parallel stages, whose tensors have a
// per_range (instance = layer - first_layer), run against the enumeration's byte oracle: destination
// poisoned first, every byte compared, under identity, reversed and random block tables.
#include <catch2/catch.hpp>
#include <map>

#include "emit/emit.hpp"
#include "emit/kernel_fixture.hpp"
#include "layout/layout_fixture.hpp"
#include "spec/catalog.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

std::shared_ptr<const spec::Layout> named(const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_layout(catalog.find_layout(name).string());
}

std::shared_ptr<const spec::Layout> bound_params(const std::string& family, const std::map<std::string, std::int64_t>& values) {
  std::string name = family + "[";
  for (const auto& [k, v] : values) name += (name.back() == '[' ? "" : ",") + k + "=" + std::to_string(v);
  return spec::with_params(*named(family), values, name + "]");
}

}  // namespace

TEST_CASE("emitted CPU kernels into and out of a PP stage (per_range) move exactly the oracle's bytes", "[emit][kernels][per-range]") {
  auto whole = named("vllm-flash-nhd");
  auto stage1 = bound_params("vllm-flash-nhd-pp", {{"pp_size", 2}, {"pp_rank", 1}});
  auto stage0 = bound_params("vllm-flash-nhd-pp", {{"pp_size", 2}, {"pp_rank", 0}});
  auto stage1_tp1 = bound_params("vllm-flash-nhd-tp-pp", {{"pp_size", 2}, {"pp_rank", 1}, {"tp_size", 2}, {"tp_rank", 1}});
  struct Pair {
    std::shared_ptr<const spec::Layout> s, t;
    prove::Grade grade;
  };
  const std::vector<Pair> pairs = {{whole, stage1, prove::Grade::Subset},
                                   {whole, stage0, prove::Grade::Subset},
                                   {stage1, stage1, prove::Grade::ExactToken},
                                   {stage1, stage1_tp1, prove::Grade::Subset},
                                   {whole, stage1_tp1, prove::Grade::Subset}};
  // 2 layers (stage 1 = layer 1, one instance) and 5 (stage 1 = layers [3, 5), two instances from 3).
  for (std::int64_t layers : {2, 5}) {
    spec::CacheShape cache = test::small_cache();
    cache.params["num_layers"] = layers;
    cache.name = "small-" + std::to_string(layers) + "-layers";
    INFO("num_layers " << layers);
    struct Case {
      std::size_t pair;
      std::string name;
    };
    std::vector<Case> cases;
    std::vector<std::string> sources(2);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      prove::Proof p = prove::prove(pairs[i].s, pairs[i].t, cache);
      INFO(pairs[i].s->name << " -> " << pairs[i].t->name);
      REQUIRE(prove::grade_name(p.grade) == prove::grade_name(pairs[i].grade));
      if (pairs[i].t == stage1 && layers == 5) REQUIRE(p.target_bound->tensors.at(0).per_first == 3);
      for (bool naive : {false, true}) {
        emit::EmitOptions o;
        o.name = std::string(naive ? "naive_" : "planned_") + std::to_string(i);
        o.naive = naive;
        std::string source = emit::emit_kernel(p, o);
        sources[cases.size() % sources.size()] += source;
        cases.push_back({i, o.name});
      }
    }
    test::TempDir dir;
    test::KernelLibrary library(sources, dir.path().string());
    for (const Case& c : cases) {
      const Pair& pair = pairs[c.pair];
      INFO(c.name << ": " << pair.s->name << " -> " << pair.t->name);
      auto S = enumerate::enumerate_layout(pair.s, cache), T = enumerate::enumerate_layout(pair.t, cache);
      REQUIRE(S.enumerated());
      REQUIRE(T.enumerated());
      test::Kernel kernel = library.find(c.name);
      REQUIRE(kernel != nullptr);
      for (std::size_t k = 0; k < 3; ++k) {
        for (std::int64_t n : {cache.params.at("num_tokens"), std::int64_t{37}, std::int64_t{0}}) {
          INFO(enumerate::table_choice_name(k) << " tables, num_tokens " << n);
          test::KernelRun run = test::run_against_oracle(kernel, S, T, k, n, k == 1 ? 3 : 1);
          CHECK(run.code == 0);
          CHECK(run.wrong_bytes == 0);
          if (n > 0) CHECK(run.moved > 0);
        }
      }
    }
  }
}

TEST_CASE("the kernel generator refuses a move into the whole cache from one PP stage", "[emit][per-range]") {
  auto stage1 = bound_params("vllm-flash-nhd-pp", {{"pp_size", 2}, {"pp_rank", 1}});
  prove::Proof p = prove::prove(stage1, named("vllm-flash-nhd"), test::small_cache());
  CHECK(p.grade == prove::Grade::Refused);
  CHECK_THROWS_AS(emit::emit_kernel(p, emit::EmitOptions{}), emit::NotEmittable);
}

// Emitted CUDA kernels: compiled with nvcc for sm_80 and sm_90 (every layout as source and as target, the
// converting kernels included), and, where a GPU is present, run against the byte oracle like the CPU
// kernels. Without nvcc or without a GPU the test says what it skipped.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <fstream>

#include "certificate/matrix.hpp"
#include "emit/emit.hpp"
#include "enumerate/patterns.hpp"
#include "enumerate/reference_move.hpp"
#include "enumerate/storage.hpp"
#include "emit/kernel_fixture.hpp"
#include "prove/side_cache.hpp"
#include "spec/catalog.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

using HarnessRun = int (*)(test::Kernel, int, void* const*, const std::int64_t*, int, void* const*, const std::int64_t*, int,
                           const std::int32_t* const*, const std::int64_t*, int, const std::int32_t* const*,
                           const std::int64_t*, std::int64_t);

}  // namespace

TEST_CASE("emitted CUDA kernels compile for sm_80 and sm_90 and, on a GPU, move exactly the oracle's bytes", "[emit][cuda]") {
  if (test::run_command("command -v nvcc").exit_code != 0) {
    WARN("skipped: nvcc is not on PATH, so the CUDA kernels were neither compiled nor run");
    return;
  }
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto layouts = spec::load_layouts(catalog);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  prove::ProveOptions options;
  options.side_cache = std::make_shared<prove::SideCache>();
  // Every layout as source and as target: its self pair and its pairs with the reference layout, both ways.
  std::size_t reference = 0;
  for (std::size_t i = 0; i < layouts.size(); ++i)
    if (layouts[i]->name == "vllm-flash-nhd") reference = i;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    pairs.push_back({i, i});
    pairs.push_back({i, reference});
    pairs.push_back({reference, i});
  }
  std::string source = "#include \"cuda_harness.cu\"\n";
  std::vector<std::tuple<std::size_t, std::size_t, std::string>> kernels;
  for (auto [s, t] : pairs) {
    prove::Proof p = prove::prove(layouts[s], layouts[t], small, options);
    if (!emit::emittable(p.grade, true)) continue;
    emit::EmitOptions o;
    o.target = emit::Target::Cuda;
    o.allow_not_exact = true;
    o.name = "cuda_kernel_" + std::to_string(s) + "_" + std::to_string(t);
    if (std::any_of(kernels.begin(), kernels.end(), [&](const auto& k) { return std::get<2>(k) == o.name; })) continue;
    source += emit::emit_kernel(p, o);
    kernels.emplace_back(s, t, o.name);
  }
  REQUIRE(kernels.size() > 40);
  test::TempDir dir;
  std::ofstream(dir.path() / "kernels.cu") << source;
  std::string harness = std::string(KVLAYOUT_SOURCE_DIR) + "/tests/emit";
  auto built = test::run_command("cd '" + dir.path().string() + "' && nvcc -std=c++17 -O2 --threads 2 -I'" + harness +
                                 "' -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                                 "-Xcompiler -fPIC -shared kernels.cu -o kernels.so");
  INFO(built.err.substr(0, 4000));
  REQUIRE(built.exit_code == 0);

  void* library = dlopen((dir.path() / "kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library);
  auto devices = reinterpret_cast<int (*)()>(dlsym(library, "harness_devices"));
  auto run = reinterpret_cast<HarnessRun>(dlsym(library, "harness_run"));
  REQUIRE(devices);
  REQUIRE(run);
  if (devices() == 0) {
    WARN("compiled " << kernels.size() << " CUDA kernels for sm_80 and sm_90; skipped running them: no GPU on this machine");
    dlclose(library);
    return;
  }
  for (const auto& [s, t, name] : kernels) {
    auto S = enumerate::enumerate_layout(layouts[s], small), T = enumerate::enumerate_layout(layouts[t], small);
    auto kernel = reinterpret_cast<test::Kernel>(dlsym(library, name.c_str()));
    REQUIRE(kernel);
    for (std::size_t k = 0; k < 3; ++k) {
      for (std::int64_t n : {small.params.at("num_tokens"), std::int64_t{37}}) {
        INFO(layouts[s]->name << " -> " << layouts[t]->name << ", " << enumerate::table_choice_name(k) << " tables, num_tokens " << n);
        enumerate::Storage src(*S.bound, S.maps[k]), dst(*T.bound, T.maps[k]), expected(*T.bound, T.maps[k]);
        auto ps = enumerate::patterns_for(S.layout->dtype), pt = enumerate::patterns_for(T.layout->dtype);
        for (std::int64_t e = 0; e < src.elements(); ++e)
          src.set(e, ps.safe[static_cast<std::size_t>((e * 7919 + 13) % static_cast<std::int64_t>(ps.safe.size()))]);
        dst.fill(pt.poison);
        expected.fill(pt.poison);
        enumerate::reference_move(S, T, k, n, src, expected);
        auto st = test::int32_tables(S, k), dt = test::int32_tables(T, k);
        std::vector<const std::int32_t*> stp, dtp;
        std::vector<std::int64_t> stl, dtl, sb, db;
        for (auto& x : st) { stp.push_back(x.data()); stl.push_back(static_cast<std::int64_t>(x.size())); }
        for (auto& x : dt) { dtp.push_back(x.data()); dtl.push_back(static_cast<std::int64_t>(x.size())); }
        for (const auto& b : src.buffers()) sb.push_back(static_cast<std::int64_t>(b.size()));
        for (const auto& b : dst.buffers()) db.push_back(static_cast<std::int64_t>(b.size()));
        auto sp = src.bases(), dp = dst.bases();
        int code = run(kernel, static_cast<int>(sp.size()), sp.data(), sb.data(), static_cast<int>(dp.size()), dp.data(), db.data(),
                       static_cast<int>(stp.size()), stp.data(), stl.data(), static_cast<int>(dtp.size()), dtp.data(), dtl.data(), n);
        CHECK(code == 0);
        std::int64_t wrong = 0;
        for (std::size_t b = 0; b < dst.buffers().size(); ++b)
          for (std::size_t i = 0; i < dst.buffers()[b].size(); ++i) wrong += dst.buffers()[b][i] != expected.buffers()[b][i];
        CHECK(wrong == 0);
      }
    }
  }
  dlclose(library);
}

// kvlayout_bench_plan: `plan check` on a million descriptors at production size. llama-3.1-8b at 16384
// tokens, vLLM FlashAttention (NHD, K/V-first, random block tables) -> SGLang MHA pool (token-major, random
// page table): one descriptor per (layer, K/V, token) of num_kv_heads * head_size * 2 bytes, the way
// SGLang's Mooncake connector sends per-token slices: 32 * 2 * 16384 = 1,048,576 descriptor pairs. The
// issue's target: <= 5 s and <= 1 GiB. Counters: descriptors, bytes checked, peak RSS of the process.
// Built with -DKVLAYOUT_BENCH=ON; run by hand: ./build/bench/kvlayout_bench_plan
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

#include "check/plan_check.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

struct Setting {
  layout::BoundLayout source, target;
  nlohmann::json plan;   // correct
  std::string text;      // the correct plan as a file would hold it (hex addresses)
};

std::int64_t base(int side, int tensor, std::int64_t instance) {
  return (std::int64_t{side ? 0x7e : 0x7f} << 40) + (std::int64_t{tensor} << 36) + (instance << 30);
}

nlohmann::json regions(const layout::BoundLayout& b, int side) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    for (std::int64_t i = 0; i < b.tensors[t].instances; ++i)
      out.push_back({{"tensor", b.tensors[t].name}, {"instance", i}, {"base", base(side, static_cast<int>(t), i)}});
  return out;
}

nlohmann::json table(const layout::BlockTables& t, const layout::BoundLayout& b) {
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t i = 0; i < b.tables[0].length; ++i) out.push_back(t.entry(0, i));
  return out;
}

const Setting& setting() {
  static const Setting s = [] {
    spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
    const auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
    const layout::Overrides o = {{"num_tokens", 16384}};
    Setting x{layout::bind(spec::load_layout(catalog.find_layout("vllm-flash-nhd").string()), cache, o),
              layout::bind(spec::load_layout(catalog.find_layout("sglang-mha").string()), cache, o), {}, {}};
    const auto ts = layout::random_tables(x.source, 1), tt = layout::random_tables(x.target, 2);
    const std::int64_t len = 8 * 128 * 2;
    nlohmann::json sd = nlohmann::json::array(), td = nlohmann::json::array();
    auto addr = [](const layout::BoundLayout& b, int side, const std::vector<std::int64_t>& c, const layout::BlockTables& t) {
      const auto loc = layout::locate(b, c, t);
      return base(side, loc.address.tensor, loc.address.instance) + loc.address.offset * b.element_bytes();
    };
    for (std::int64_t l = 0; l < 32; ++l)
      for (std::int64_t kv = 0; kv < 2; ++kv)
        for (std::int64_t tok = 0; tok < 16384; ++tok) {
          const std::vector<std::int64_t> c = {l, kv, tok, 0, 0};
          sd.push_back({addr(x.source, 0, c, ts), len});
          td.push_back({addr(x.target, 1, c, tt), len});
        }
    x.plan = {{"form", "descriptors"}, {"source_regions", regions(x.source, 0)}, {"target_regions", regions(x.target, 1)},
              {"source_descriptors", sd}, {"target_descriptors", td},
              {"tables", {{"source.block_table", table(ts, x.source)}, {"target.page_table", table(tt, x.target)}}}};
    // The file form: hex strings, as NIXL dumps are written.
    nlohmann::json file = x.plan;
    for (auto* side : {"source_descriptors", "target_descriptors"})
      for (auto& d : file[side]) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(d[0].get<std::int64_t>()));
        d[0] = buf;
      }
    x.text = file.dump();
    // KVLAYOUT_BENCH_PLAN_FILE=path also writes the plan, to time the CLI end to end:
    //   /usr/bin/time -v kvlayout plan check vllm-flash-nhd sglang-mha --cache llama-3.1-8b \
    //     --param num_tokens=16384 --plan path
    if (const char* path = std::getenv("KVLAYOUT_BENCH_PLAN_FILE")) {
      std::FILE* f = std::fopen(path, "w");
      if (f) {
        std::fwrite(x.text.data(), 1, x.text.size(), f);
        std::fclose(f);
      }
    }
    return x;
  }();
  return s;
}

void report(benchmark::State& state, const check::CheckResult& r) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  state.counters["descriptors"] = static_cast<double>(r.checked_descriptors.value_or(0));
  state.counters["bytes_checked"] = static_cast<double>(r.checked_bytes.value_or(0));
  state.counters["peak_rss_MiB"] = static_cast<double>(u.ru_maxrss) / 1024.0;
  state.SetLabel(check::code(r.verdict));
}

// check_plan on the parsed plan (what `plan check` does after reading the file).
void BM_PlanCheckCorrect(benchmark::State& state) {
  const Setting& s = setting();
  check::CheckResult r;
  for (auto _ : state) r = check::check_plan(s.source, s.target, s.plan, "bench");
  if (r.verdict != check::Verdict::Ok) state.SkipWithError(("expected OK, got " + check::code(r.verdict) + ": " + r.message).c_str());
  report(state, r);
}

// Parsing the file's text (hex addresses) and checking: the whole of `plan check` but binding.
void BM_PlanParseAndCheck(benchmark::State& state) {
  const Setting& s = setting();
  check::CheckResult r;
  for (auto _ : state) {
    const nlohmann::json plan = nlohmann::json::parse(s.text);
    r = check::check_plan(s.source, s.target, plan, "bench");
  }
  state.counters["json_MiB"] = static_cast<double>(s.text.size()) / (1 << 20);
  report(state, r);
}

// The wrong variant: two target descriptors swapped (two tokens exchange places) -> WRONG_MAPPING.
void BM_PlanCheckWrong(benchmark::State& state) {
  const Setting& s = setting();
  nlohmann::json plan = s.plan;
  std::swap(plan["target_descriptors"][777777], plan["target_descriptors"][777778]);
  check::CheckResult r;
  for (auto _ : state) r = check::check_plan(s.source, s.target, plan, "bench");
  if (r.verdict != check::Verdict::WrongMapping) state.SkipWithError(("expected WRONG_MAPPING, got " + check::code(r.verdict)).c_str());
  report(state, r);
}

}  // namespace

BENCHMARK(BM_PlanCheckCorrect)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PlanParseAndCheck)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_PlanCheckWrong)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_MAIN();

// Relayout kernels at serving size: llama-3.1-8b cut to 8192 tokens (1 GiB of bf16 K/V), each emitted
// kernel against memcpy of the same bytes and against the naive per-element kernel (div/mod per element),
// on 1 and 2 threads. Every benchmark reports bytes_per_second over the cache bytes moved, so
// `--benchmark_format=json` gives the ratios directly. Block tables are seeded random permutations.
// Every buffer starts on a 64-byte line, as PyTorch's CPU allocator and CUDA allocations do.
#include <benchmark/benchmark.h>

#include <boost/align/aligned_allocator.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "layout/block_tables.hpp"
#include "spec/catalog.hpp"

using Kernel = int (*)(void* const*, void* const*, const std::int32_t* const*, const std::int32_t* const*, std::int64_t, int);

#define KVLAYOUT_BENCH_KERNEL(id) \
  extern "C" int relayout_##id(void* const*, void* const*, const std::int32_t* const*, const std::int32_t* const*, std::int64_t, int); \
  extern "C" int naive_##id(void* const*, void* const*, const std::int32_t* const*, const std::int32_t* const*, std::int64_t, int);
KVLAYOUT_BENCH_KERNELS

namespace {

using namespace kvlayout;

constexpr std::int64_t kTokens = 8192;

using Buffer = std::vector<char, boost::alignment::aligned_allocator<char, 64>>;

struct Side {
  std::vector<Buffer> buffers;
  std::vector<void*> bases;
  std::vector<std::vector<std::int32_t>> tables;
  std::vector<const std::int32_t*> table_bases;
  std::int64_t held_bytes = 0;
};

Side allocate(const std::string& name, std::uint64_t seed) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("llama-3.1-8b").string());
  auto b = layout::bind(spec::load_layout(catalog.find_layout(name).string()), cache, {{"num_tokens", kTokens}});
  Side s;
  for (const auto& t : b.tensors)
    for (std::int64_t i = 0; i < t.instances; ++i) {
      const std::size_t bytes = static_cast<std::size_t>(t.size * b.element_bytes());
      s.buffers.emplace_back(bytes, static_cast<char>(seed));  // every page touched before timing
      s.bases.push_back(s.buffers.back().data());
    }
  s.tables = layout::int32_entries(b, layout::random_tables(b, seed));
  for (auto& t : s.tables) s.table_bases.push_back(t.data());
  std::int64_t positions = 1;
  for (std::int64_t e : b.coord_extents) positions *= e;
  s.held_bytes = positions * b.element_bytes();
  return s;
}

void run_kernel(benchmark::State& state, Kernel kernel, const std::string& source, const std::string& target) {
  const int threads = static_cast<int>(state.range(0));
  Side s = allocate(source, 1), t = allocate(target, 2);
  for (auto _ : state) {
    int code = kernel(s.bases.data(), t.bases.data(), s.table_bases.data(), t.table_bases.data(), kTokens, threads);
    if (code != 0) state.SkipWithError("the kernel returned an error");
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * s.held_bytes);
}

// memcpy of the same bytes (the per-head K/V of every layer and token), split across the threads.
void run_memcpy(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const std::size_t bytes = static_cast<std::size_t>(32) * 2 * kTokens * 8 * 128 * 2;
  Buffer from(bytes, 1), to(bytes, 2);
  for (auto _ : state) {
    std::vector<std::thread> workers;
    auto part = [&](int p) {
      std::size_t begin = bytes * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
      std::size_t end = bytes * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads);
      std::memcpy(to.data() + begin, from.data() + begin, end - begin);
    };
    for (int p = 1; p < threads; ++p) workers.emplace_back(part, p);
    part(0);
    for (auto& w : workers) w.join();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

struct Pair {
  const char* source;
  const char* target;
  Kernel relayout;
  Kernel naive;
};

#define KVLAYOUT_BENCH_PAIR(id, source, target) Pair{source, target, relayout_##id, naive_##id},
const Pair kPairs[] = {KVLAYOUT_BENCH_PAIRS};

int register_all() {
  benchmark::RegisterBenchmark("memcpy", run_memcpy)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (const Pair& p : kPairs) {
    std::string pair = std::string(p.source) + "/" + p.target;
    benchmark::RegisterBenchmark(("relayout/" + pair).c_str(), run_kernel, p.relayout, p.source, p.target)
        ->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("naive/" + pair).c_str(), run_kernel, p.naive, p.source, p.target)
        ->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  return 0;
}
const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();

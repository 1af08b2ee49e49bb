// Every emittable pair at the memory limit: each ordered pair of shipped engine layouts (same content,
// controls and rank families left out) that proves EXACT on a cache shape is emitted, compiled with -O2 and
// timed against memcpy of the same bytes at equal thread count. The cache is cut to --mib MiB per side
// (256 by default), and the six headline pairs run again at --headline-mib (1024).
//
// Each repetition times memcpy and the kernel back to back, alternating which goes first, for every
// thread count; the figures are the medians over repetitions and the ratio is kernel bandwidth over
// memcpy bandwidth. Buffers start on pages; block tables are seeded random permutations.
//
// With --roofline, each pair of runs that is under 0.8x memcpy at some thread count is timed again,
// interleaved with memcpy and with its own runs replayed by a bare copy loop (access_replay.hpp), to tell
// a kernel's cost from its access pattern's; the transposes and the element-by-element moves are held
// against patterns of their own (pattern_set.hpp), timed once before the pairs and again beside each such
// pair under 0.8x, interleaved with it, together with the pair's runs cells' own runs replayed (a
// transposed V beside its K's rows). Those second timings run on a second placement of the pair's buffers
// (other physical pages of the arena) where the arena has room, as the JSON's timed_again_on_other_pages
// says.
//
// Usage: kvlayout_bench_sweep [--mib N] [--headline-mib N] [--repetitions N] [--threads 1,2] [--filter TEXT]
//                             [--hugepages] [--json FILE] [--workdir DIR] [--jobs N] [--roofline]
#include <cpuid.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

#include "access_replay.hpp"
#include "sweep_against.hpp"
#include "move_kind.hpp"
#include "parallel_parts.hpp"
#include "pattern_set.hpp"
#include "emit/code_key.hpp"
#include "emit/cpu_choices.hpp"
#include "emit/emit.hpp"
#include "emit/plan.hpp"
#include "layout/block_tables.hpp"
#include "native/kernel_library.hpp"
#include "native/streaming_store_order.hpp"
#include "prove/proof.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"

using namespace kvlayout;

namespace {

struct Options {
  std::int64_t mib = 256, headline_mib = 1024;
  int repetitions = 5, jobs = 2;
  std::vector<int> threads = {1, 2};
  std::string filter, json, workdir = "/tmp/kvlayout-sweep";
  std::string replacement;  // --source FILE: a hand-edited kernel for the one pair selected (function k0)
  bool hugepages = false;
  // --ab NAME=VALUE: also time each kernel with the environment's NAME set to VALUE (read by the kernel at
  // each call: KVLAYOUT_ISA, or any per-CPU choice's variable in kvlayout's emit/cpu_choices.cpp),
  // interleaved; --isa-ab is --ab KVLAYOUT_ISA=baseline. Empty when not asked.
  std::string ab_name, ab_value;
  // --ab-source FILE: instead, also time a hand-edited kernel of the one pair selected (function k0, as
  // --source), interleaved with the pair's kernel (or --source's) in the same repetitions. Two files need no
  // switch read from the environment: a hand edit whose switch is read once and kept (a static) runs the
  // same code in both slots of --ab.
  std::string ab_replacement;
  bool ab() const { return !ab_name.empty() || !ab_replacement.empty(); }
  std::string ab_label() const { return ab_replacement.empty() ? ab_name + "=" + ab_value : "--ab-source " + ab_replacement; }
  bool headline_only = false;  // --headline-only: the six headline pairs alone
  // --against FILE: an earlier sweep's --json, read before anything is timed; the summary then says how
  // this sweep's pairs moved against it, the kernels whose code is unchanged giving the machine's drift
  // (sweep_against.hpp).
  std::string against;
  // --roofline: every pair of runs under 0.8x memcpy at some thread count is timed again against its own
  // access pattern replayed (access_replay.hpp), interleaved with the kernel and memcpy.
  bool roofline = false;
  // --source-offset / --target-offset N: every instance of that side starts N bytes past a page (np.empty's
  // large arrays start 16 past one); 0 by default, as an engine's cache does.
  std::int64_t source_offset = 0, target_offset = 0;
};

const char* const kHeadline[][2] = {{"hf-dynamic", "vllm-flash-nhd"},    {"vllm-flash-nhd", "lmcache-2ltd"},
                                    {"trtllm-pool", "vllm-flash-nhd"},   {"vllm-flash-nhd", "sglang-mha"},
                                    {"vllm-flash-nhd", "vllm-flash-hnd"}, {"vllm-paged-legacy", "vllm-flash-nhd"}};

// Whether a pair's "source/target" name is selected by --filter: by any of its comma-separated
// alternatives, each a substring of the name, or with a leading '^' its start and with a trailing '$' its
// end (X/sglang-host-page-first$ leaves out X/sglang-host-page-first-direct; ^A/B$ is the one pair A -> B);
// an empty filter takes all.
bool matches_alternative(const std::string& name, std::string alternative) {
  const bool at_start = !alternative.empty() && alternative.front() == '^';
  if (at_start) alternative.erase(0, 1);
  const bool at_end = !alternative.empty() && alternative.back() == '$';
  if (at_end) alternative.pop_back();
  if (at_start && at_end) return name == alternative;
  if (at_start) return name.rfind(alternative, 0) == 0;
  if (at_end) return name.size() >= alternative.size() && name.compare(name.size() - alternative.size(), alternative.size(), alternative) == 0;
  return name.find(alternative) != std::string::npos;
}

bool matches_filter(const std::string& name, const std::string& filter) {
  if (filter.empty()) return true;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = filter.find(',', begin);
    if (matches_alternative(name, filter.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin))) return true;
    if (comma == std::string::npos) return false;
    begin = comma + 1;
  }
}

// One page-aligned anonymous mapping, touched once before any timing (as a serving cache is), optionally
// with transparent huge pages requested (madvise(MADV_HUGEPAGE), the guidance for callers in
// bench/README.md). The pairs' buffers are carved from it, so no pair pays page faults.
class Arena {
 public:
  Arena(std::size_t bytes, bool hugepages) : bytes_(std::max<std::size_t>(bytes, 4096)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (hugepages) madvise(p, bytes_, MADV_HUGEPAGE);
    data_ = static_cast<char*>(p);
    for (std::size_t i = 0; i < bytes_; i += 4096) data_[i] = static_cast<char>(i >> 12);
  }
  ~Arena() { munmap(data_, bytes_); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  // The next `bytes`, 4096-aligned; reset() starts again from the beginning.
  char* take(std::size_t bytes) {
    const std::size_t at = used_;
    used_ += (bytes + 4095) / 4096 * 4096;
    if (used_ > bytes_) throw std::runtime_error("the sweep's arena is too small");
    return data_ + at;
  }
  void reset() { used_ = 0; }
  char* base() { return data_; }
  // The bytes take() can still give before the next reset().
  std::size_t room() const { return bytes_ - used_; }

 private:
  std::size_t bytes_, used_ = 0;
  char* data_ = nullptr;
};

struct Side {
  std::vector<void*> bases;
  std::vector<std::vector<std::int32_t>> tables;
  std::vector<const std::int32_t*> table_bases;
};

// The bytes a side takes from the arena, with room for instances placed up to a page past their start.
std::size_t side_bytes(const layout::BoundLayout& b) {
  std::size_t total = 0;
  for (const auto& t : b.tensors) total += static_cast<std::size_t>(t.instances) * ((static_cast<std::size_t>(t.size * b.element_bytes()) + 4095) / 4096 * 4096 + 4096);
  return total;
}

// @pre 0 <= offset < 4096: every instance starts `offset` bytes past a page.
Side allocate(const layout::BoundLayout& b, std::uint64_t seed, Arena& arena, std::int64_t offset) {
  Side s;
  for (const auto& t : b.tensors)
    for (std::int64_t i = 0; i < t.instances; ++i)
      s.bases.push_back(arena.take(static_cast<std::size_t>(t.size * b.element_bytes() + offset)) + offset);
  s.tables = layout::int32_entries(b, layout::random_tables(b, seed));
  for (auto& t : s.tables) s.table_bases.push_back(t.data());
  return s;
}

std::int64_t held_bytes(const layout::BoundLayout& b) {
  std::int64_t positions = 1;
  for (std::int64_t e : b.coord_extents) positions *= e;
  return positions * b.element_bytes();
}

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// memcpy of `bytes`, split evenly across `threads` (as the kernels split their work).
void split_memcpy(char* to, const char* from, std::size_t bytes, int threads) {
  auto part = [&](int p) {
    const std::size_t begin = bytes * static_cast<std::size_t>(p) / static_cast<std::size_t>(threads);
    const std::size_t end = bytes * static_cast<std::size_t>(p + 1) / static_cast<std::size_t>(threads);
    std::memcpy(to + begin, from + begin, end - begin);
  };
  bench::run_parts(threads, part);
}

struct Pair {
  std::string cache, source, target, grade, kernel;
  spec::CacheShape cache_shape;
  std::size_t arena_bytes = 0;  // both sides and the memcpy buffers
  std::string code;  // the emitted kernel; empty when an earlier pair emitted the same code
  int same_as = -1;   // that earlier pair (whose kernel, and timing, this pair shares), or -1
  std::string kind;  // the plan's hardest cell (move_kind)
  std::string turn;  // a transpose's direction (transpose_turn), or empty
  std::shared_ptr<const spec::Layout> source_layout, target_layout;
  std::int64_t tokens = 0;
  bool headline = false;
  // Of the moved elements, the share held against each ceiling key (ceiling_shares); the runs cells'
  // (bench::kOwnRunsKey) against their own runs replayed.
  std::map<std::string, double> ceiling_shares;
  std::int64_t shortest_own_run = 0;  // bench::shortest_own_run: the observed runs kept for that replay
  std::string digest;  // emit::kernel_code_digest of its kernel
  double pattern_share() const { return ceiling_shares.count(bench::kOwnRunsKey) ? 1 - ceiling_shares.at(bench::kOwnRunsKey) : 1; }
};

struct Timing {
  double kernel_gibs = 0, memcpy_gibs = 0, ratio = 0;
  double ab_ratio = 0;  // with --ab: the kernel's bandwidth with the environment set, over memcpy's
};

// With --roofline: the kernel against its own runs replayed in target and in source order, each in one
// stream and in four (access_replay.hpp's Streams); the replay is the best of the four.
struct ReplayTiming {
  double kernel_gibs = 0, memcpy_gibs = 0, target_order_gibs = 0, source_order_gibs = 0;
  double target_order_four_gibs = 0, source_order_four_gibs = 0;
  double best_replay_gibs() const { return std::max({target_order_gibs, source_order_gibs, target_order_four_gibs, source_order_four_gibs}); }
  double replay_ratio() const { return best_replay_gibs() / memcpy_gibs; }
  double kernel_of_replay() const { return kernel_gibs / best_replay_gibs(); }
};

struct Replayed {
  std::size_t runs = 0;
  double mean_run_bytes = 0;
  std::map<int, ReplayTiming> timings;
};

bool is_headline(const std::string& s, const std::string& t) {
  for (const auto& h : kHeadline)
    if (s == h[0] && t == h[1]) return true;
  return false;
}

// Phase 1: every ordered same-content pair of shipped engine layouts that fits the cache and proves EXACT,
// with its kernel emitted.
std::vector<Pair> exact_pairs(const spec::Catalog& catalog, const Options& o) {
  std::vector<std::shared_ptr<const spec::Layout>> engines;
  for (const auto& f : catalog.layout_files()) {
    auto l = spec::load_layout(f.string());
    if (!l->control && !spec::is_family(*l)) engines.push_back(l);
  }
  std::vector<Pair> pairs;
  // Proven-equal declarations (a release line's and its commit-pinned one, say) emit one kernel: it is
  // compiled and timed once, for every pair that emits it.
  std::map<std::string, int> first_with_code;
  for (const char* cache_name : {"llama-3.1-8b", "deepseek-v3"}) {
    const spec::CacheShape cache = spec::load_cache(catalog.find_cache(cache_name).string());
    for (const auto& s : engines) {
      const layout::BoundLayout one = layout::bind(s, cache, {{"num_tokens", 64}});
      if (!one.fits()) continue;
      const std::int64_t per_token = held_bytes(one) / 64;
      for (const auto& t : engines) {
        if (s->content.name != t->content.name || s == t) continue;
        if (!matches_filter(s->name + "/" + t->name, o.filter)) continue;
        for (bool headline : {false, true}) {
          if (!headline && o.headline_only) continue;
          if (headline && (o.headline_mib <= 0 || std::string(cache_name) != "llama-3.1-8b" || !is_headline(s->name, t->name))) continue;
          const std::int64_t mib = headline ? o.headline_mib : o.mib;
          const std::int64_t tokens = std::max<std::int64_t>(64, (mib << 20) / per_token / 64 * 64);
          prove::Proof proof;
          try {
            proof = prove::prove(s, t, cache, {}, {{"num_tokens", tokens}});
          } catch (const std::exception&) {
            continue;  // a pair that does not bind at this size (e.g. a fixed pool) is not in the sweep
          }
          if (proof.grade != prove::Grade::ExactByte && proof.grade != prove::Grade::ExactToken) continue;
          Pair p{cache_name, s->name, t->name, prove::grade_name(proof.grade), "k" + std::to_string(pairs.size()), cache, 0, "", -1, "", "", s, t, tokens, headline};
          p.arena_bytes = side_bytes(*proof.source_bound) + side_bytes(*proof.target_bound) + 2 * static_cast<std::size_t>(held_bytes(*proof.source_bound)) + 8192;
          emit::EmitOptions e;
          e.name = p.kernel;
          p.code = emit::emit_kernel(proof, e);
          p.digest = emit::kernel_code_digest(p.code, p.kernel);
          const auto [first, fresh] = first_with_code.emplace(emit::kernel_code_key(p.code, p.kernel), static_cast<int>(pairs.size()));
          if (!fresh) {
            p.same_as = first->second;
            p.kernel = pairs[static_cast<std::size_t>(first->second)].kernel;
            p.code.clear();
          }
          const emit::Plan plan = emit::make_plan(*proof.source_bound, *proof.target_bound, emit::kCpuPlanOptions);
          p.kind = bench::move_kind(plan, proof.source_bound->element_bytes());
          if (p.kind.rfind(bench::kTransposeKind, 0) == 0) p.turn = bench::transpose_turn(plan, proof.source_bound->element_bytes());
          p.ceiling_shares = bench::ceiling_shares(plan, proof.source_bound->element_bytes(), bench::ceiling_key(p.kind, p.turn));
          p.shortest_own_run = bench::shortest_own_run(plan, proof.source_bound->element_bytes());
          pairs.push_back(std::move(p));
        }
      }
    }
  }
  return pairs;
}

// The text of a hand-edited kernel (`flag` FILE: --source or --ab-source) for the one kernel selected, for
// trying a change to the generator by hand before making it.
// @pre `kernels` is the number of distinct kernels the pairs hold.
std::string hand_edited_kernel(const std::vector<Pair>& pairs, std::size_t kernels, const std::string& file, const std::string& flag) {
  // One kernel only: the file replaces the whole translation unit, so a second pair in it would lose its
  // kernel (and a --filter substring such as X/sglang-host-page-first also selects X/...-direct: end it with '$').
  if (kernels != 1)
    throw std::runtime_error(flag + " needs --filter to select exactly one pair; it selects " + std::to_string(kernels) + " distinct kernels");
  std::ifstream in(file);
  if (!in) throw std::runtime_error(flag + ": cannot read " + file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The header kvlayout emit writes names the pair: a kernel of another pair would write past its buffers.
  const Pair& selected = *std::find_if(pairs.begin(), pairs.end(), [](const Pair& p) { return p.same_as < 0; });
  const std::string names = ": " + selected.source + " -> " + selected.target + " on cache shape " + selected.cache + "\n";
  if (text.find(names) == std::string::npos)
    throw std::runtime_error(flag + " " + file + " is not a kernel of " + selected.source + " -> " + selected.target + " on " + selected.cache +
                             " (its header names another pair, or none)");
  return text;
}

// Phase 2: the kernels compiled as a serving build would (-O2).
std::unique_ptr<native::KernelLibrary> compile(const std::vector<Pair>& pairs, const Options& o) {
  // Sixteen kernels per translation unit (each lives in its own namespace): the compiler's start-up and
  // the headers, not the kernels, took most of the time compiling one file per kernel.
  std::vector<std::string> sources((pairs.size() + 15) / 16);
  std::size_t kernels = 0;
  for (const Pair& p : pairs)
    if (p.same_as < 0) sources[kernels++ / 16] += p.code;
  sources.resize((kernels + 15) / 16);
  if (!o.replacement.empty()) sources[0] = hand_edited_kernel(pairs, kernels, o.replacement, "--source");
  std::filesystem::create_directories(o.workdir);
  native::CompileOptions c;
  c.jobs = o.jobs;
  c.keep_assembly = true;  // for store_order
  return std::make_unique<native::KernelLibrary>(sources, o.workdir, c);
}

// Phase 2b: the order the compiler gave each kernel's streaming stores, read from the assembly compile()
// kept: the kernels where some 64-byte line's stores are split by another line's (kv_line_stored is
// there to prevent it; native/streaming_store_order.hpp says why it matters and how it is read).
spec::Json store_order(const native::KernelLibrary& library, const std::vector<Pair>& pairs) {
  std::map<std::string, std::pair<std::size_t, std::size_t>> by_kernel;  // kernel -> groups of stores, groups splitting lines
  for (const std::string& shared_object : library.files()) {
    std::ifstream in(std::filesystem::path(shared_object).replace_extension(".s"));
    if (!in) throw std::runtime_error("cannot read the assembly kept beside " + shared_object);
    const std::string assembly((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const native::StreamingStoreGroup& g : native::streaming_store_groups(assembly)) {
      auto& [groups, splitting] = by_kernel[native::generated_kernel_of(g.function)];
      ++groups;
      splitting += native::splits_lines(g) ? 1 : 0;
    }
  }
  std::size_t kernels = 0, streaming = 0;
  spec::Json splitting = spec::Json::array();
  for (const Pair& p : pairs) {
    if (p.same_as >= 0) continue;
    ++kernels;
    const auto found = by_kernel.find(p.kernel);
    if (found == by_kernel.end()) continue;
    ++streaming;
    if (found->second.second > 0)
      splitting.push_back({{"pair", p.cache + " " + p.source + " -> " + p.target}, {"groups", found->second.first}, {"splitting", found->second.second}});
  }
  std::printf("store order: %zu kernels, %zu with streaming stores in groups, %zu of them split a line's stores by another line's\n", kernels, streaming,
              splitting.size());
  for (const auto& k : splitting)
    std::printf("    lines split: %s (%zu of %zu groups)\n", k["pair"].get<std::string>().c_str(), k["splitting"].get<std::size_t>(), k["groups"].get<std::size_t>());
  std::fflush(stdout);
  return {{"kernels", kernels}, {"streaming", streaming}, {"splitting_lines", splitting}};
}

// --ab-source's kernel, compiled apart (both files define k0), or null when not asked.
std::unique_ptr<native::KernelLibrary> compile_ab_source(const std::vector<Pair>& pairs, const Options& o) {
  if (o.ab_replacement.empty()) return nullptr;
  const auto kernels = static_cast<std::size_t>(std::count_if(pairs.begin(), pairs.end(), [](const Pair& p) { return p.same_as < 0; }));
  const std::vector<std::string> sources = {hand_edited_kernel(pairs, kernels, o.ab_replacement, "--ab-source")};
  const std::string dir = o.workdir + "/ab-source";
  std::filesystem::create_directories(dir);
  native::CompileOptions c;
  c.jobs = o.jobs;
  return std::make_unique<native::KernelLibrary>(sources, dir, c);
}

// One side's tensor instances, as the replay sees them.
std::vector<bench::Region> regions(const layout::BoundLayout& b, const Side& side) {
  std::vector<bench::Region> out;
  std::size_t i = 0;
  for (const auto& t : b.tensors)
    for (std::int64_t k = 0; k < t.instances; ++k)
      out.push_back({static_cast<char*>(side.bases[i++]), static_cast<std::size_t>(t.size * b.element_bytes())});
  return out;
}

// Phase 3b (--roofline): the kernel's runs observed, then the kernel, memcpy and the runs replayed in
// target and in source order, in one stream and in four, interleaved per repetition and thread count.
// @pre the kernel moves elements unchanged (both sides' element bytes equal).
Replayed measure_replay(const std::function<void(int)>& run_kernel, const layout::BoundLayout& sb, const layout::BoundLayout& tb, const Side& s,
                        const Side& t, Arena& arena, char* from, char* to, std::size_t bytes, const Options& o) {
  const std::size_t e = static_cast<std::size_t>(sb.element_bytes());
  const std::vector<bench::Run> by_target = bench::observe_runs([&] { run_kernel(1); }, regions(sb, s), regions(tb, t), e, arena.base());
  const std::vector<bench::Run> by_source = bench::in_source_order(by_target);
  Replayed out;
  out.runs = by_target.size();
  out.mean_run_bytes = by_target.empty() ? 0 : static_cast<double>(bytes) / static_cast<double>(by_target.size());
  std::map<int, std::vector<double>> kernel_s, memcpy_s, target_s, source_s, target4_s, source4_s;
  for (int r = 0; r < o.repetitions; ++r)
    for (int threads : o.threads) {
      auto k = [&] { kernel_s[threads].push_back(seconds_of([&] { run_kernel(threads); })); };
      auto m = [&] { memcpy_s[threads].push_back(seconds_of([&] { split_memcpy(to, from, bytes, threads); })); };
      auto replayed = [&](std::map<int, std::vector<double>>& into, const std::vector<bench::Run>& runs, bench::Streams streams) {
        return [&, streams] { into[threads].push_back(seconds_of([&] { bench::replay(runs, arena.base(), e, threads, streams); })); };
      };
      auto rt = replayed(target_s, by_target, bench::Streams::One), rs = replayed(source_s, by_source, bench::Streams::One);
      auto rt4 = replayed(target4_s, by_target, bench::Streams::Four), rs4 = replayed(source4_s, by_source, bench::Streams::Four);
      if (r % 2 == 0) k(), m(), rt(), rs(), rt4(), rs4();
      else rs4(), rt4(), rs(), rt(), m(), k();
    }
  const double gib = static_cast<double>(bytes) / double(1 << 30);
  for (int threads : o.threads)
    out.timings[threads] = {gib / median(kernel_s[threads]),  gib / median(memcpy_s[threads]),  gib / median(target_s[threads]),
                            gib / median(source_s[threads]),  gib / median(target4_s[threads]), gib / median(source4_s[threads])};
  return out;
}

// With --roofline: a pair held against patterns (a transpose, an element-by-element move) timed again,
// interleaved with memcpy and with each pattern row serving its ceiling key, so that the kernel and its
// ceiling are compared in the same repetitions rather than minutes apart (phase 0's figures).
struct BesideTiming {
  double kernel_gibs = 0, memcpy_gibs = 0;
  std::vector<double> pattern_ratios;  // per row (Beside::rows), as a ratio to memcpy
  // The pair's own runs (Beside::own_runs) replayed, the best of the four ways (ReplayTiming's), their
  // bandwidth over memcpy's; 0 where the pair has none.
  double own_runs_ratio = 0;
  std::map<std::string, double> best_by_key;  // the best of the rows serving each ceiling key
  double kernel_ratio() const { return kernel_gibs / memcpy_gibs; }
  double best_pattern() const { return pattern_ratios.empty() ? 0 : *std::max_element(pattern_ratios.begin(), pattern_ratios.end()); }
};

struct Beside {
  std::vector<std::size_t> rows;  // into the pattern set's rows
  std::size_t own_runs = 0, own_runs_bytes = 0;  // the pair's runs cells' runs, observed, and their bytes
  std::map<int, BesideTiming> timings;
};

struct Measured {
  std::map<int, Timing> timings;
  std::optional<Replayed> replayed;  // --roofline, runs under 0.8x at some thread count
  // --roofline: where those timings ran on a second placement of the pair's buffers (measure).
  bool again_on_other_pages = false;
  std::optional<Beside> beside;      // --roofline, a move held against patterns under 0.8x at some thread count
};

bool is_runs(const std::string& kind) { return kind.rfind("runs", 0) == 0; }

// Phase 3c (--roofline): the kernel, memcpy, each of `rows` of the pattern set (over `from` and `to`,
// `bytes` each) and the pair's own runs (`own_runs`, observed in target order, over the arena: replayed in
// both orders, in one stream and in four), interleaved per repetition and thread count.
// @pre every row moves `bytes`.
Beside measure_beside_patterns(const std::function<void(int)>& run_kernel, const bench::PatternSet& set, std::vector<std::size_t> rows,
                               const std::vector<bench::Run>& own_runs, Arena& arena, std::size_t element_bytes, char* from, char* to,
                               std::size_t bytes, const Options& o) {
  std::map<int, std::vector<double>> kernel_s, memcpy_s;
  std::map<int, std::vector<std::vector<double>>> pattern_s;
  const std::vector<bench::Run> own_by_source = bench::in_source_order(own_runs);
  // The replays' ways: {runs, streams}, ReplayTiming's four.
  const std::pair<const std::vector<bench::Run>*, bench::Streams> ways[] = {
      {&own_runs, bench::Streams::One}, {&own_by_source, bench::Streams::One}, {&own_runs, bench::Streams::Four}, {&own_by_source, bench::Streams::Four}};
  std::map<int, std::vector<std::vector<double>>> own_s;  // per thread count, per way
  for (int r = 0; r < o.repetitions; ++r)
    for (int threads : o.threads) {
      std::vector<std::function<void()>> steps;
      steps.push_back([&] { kernel_s[threads].push_back(seconds_of([&] { run_kernel(threads); })); });
      steps.push_back([&] { memcpy_s[threads].push_back(seconds_of([&] { split_memcpy(to, from, bytes, threads); })); });
      pattern_s[threads].resize(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i)
        steps.push_back([&, i] { pattern_s[threads][i].push_back(seconds_of([&] { set.rows()[rows[i]].move(to, from, threads); })); });
      own_s[threads].resize(std::size(ways));
      for (std::size_t w = 0; w < std::size(ways) && !own_runs.empty(); ++w)
        steps.push_back([&, w] {
          own_s[threads][w].push_back(seconds_of([&] { bench::replay(*ways[w].first, arena.base(), element_bytes, threads, ways[w].second); }));
        });
      if (r % 2 == 1) std::reverse(steps.begin(), steps.end());
      for (const auto& step : steps) step();
    }
  Beside out;
  out.rows = std::move(rows);
  out.own_runs = own_runs.size();
  for (const bench::Run& run : own_runs) out.own_runs_bytes += std::size_t{run.elements} * element_bytes;
  const double gib = static_cast<double>(bytes) / double(1 << 30);
  for (int threads : o.threads) {
    BesideTiming& t = out.timings[threads];
    t.kernel_gibs = gib / median(kernel_s[threads]);
    t.memcpy_gibs = gib / median(memcpy_s[threads]);
    for (const auto& times : pattern_s[threads]) t.pattern_ratios.push_back(median(memcpy_s[threads]) / median(times));
    for (std::size_t i = 0; i < out.rows.size(); ++i)
      for (const std::string& key : set.rows()[out.rows[i]].keys) t.best_by_key[key] = std::max(t.best_by_key[key], t.pattern_ratios[i]);
    if (out.own_runs_bytes > 0) {
      double best = 0;  // seconds of the fastest way
      for (const auto& times : own_s[threads]) best = best == 0 ? median(times) : std::min(best, median(times));
      t.own_runs_ratio = static_cast<double>(out.own_runs_bytes) / best / (static_cast<double>(bytes) / median(memcpy_s[threads]));
    }
  }
  return out;
}

// Phase 3: one pair timed, interleaved with memcpy of the same bytes, for every thread count.
// `ab_kernel` (--ab-source) takes the place of --ab's environment in the interleaved third slot.
Measured measure(const Pair& p, native::RelayoutKernel kernel, native::RelayoutKernel ab_kernel, const bench::PatternSet& patterns, Arena& arena,
                 const Options& o) {
  const layout::BoundLayout sb = layout::bind(p.source_layout, p.cache_shape, {{"num_tokens", p.tokens}});
  const layout::BoundLayout tb = layout::bind(p.target_layout, p.cache_shape, {{"num_tokens", p.tokens}});
  arena.reset();
  Side s = allocate(sb, 1, arena, o.source_offset), t = allocate(tb, 2, arena, o.target_offset);
  const std::size_t bytes = static_cast<std::size_t>(held_bytes(sb));
  char* const from = arena.take(bytes);
  char* const to = arena.take(bytes);
  std::map<int, std::vector<double>> kernel_s, memcpy_s, ab_s;
  int failed = 0;
  auto run_kernel = [&](int threads) {
    failed |= kernel(s.bases.data(), t.bases.data(), s.table_bases.data(), t.table_bases.data(), p.tokens, threads);
  };
  auto run_ab_kernel = [&](int threads) {
    failed |= ab_kernel(s.bases.data(), t.bases.data(), s.table_bases.data(), t.table_bases.data(), p.tokens, threads);
  };
  if (ab_kernel != nullptr)
    for (int threads : o.threads) run_ab_kernel(threads);
  for (int threads : o.threads) run_kernel(threads);  // warm: first-touch effects and thread start-up
  for (int r = 0; r < o.repetitions; ++r)
    for (int threads : o.threads) {
      auto k = [&] { kernel_s[threads].push_back(seconds_of([&] { run_kernel(threads); })); };
      auto m = [&] { memcpy_s[threads].push_back(seconds_of([&] { split_memcpy(to, from, bytes, threads); })); };
      auto b = [&] {
        if (ab_kernel != nullptr) {
          ab_s[threads].push_back(seconds_of([&] { run_ab_kernel(threads); }));
          return;
        }
        if (o.ab_name.empty()) return;
        const char* before = std::getenv(o.ab_name.c_str());
        const std::string kept = before != nullptr ? before : "";
        setenv(o.ab_name.c_str(), o.ab_value.c_str(), 1);  // read by the kernel at each call
        ab_s[threads].push_back(seconds_of([&] { run_kernel(threads); }));
        if (before != nullptr) setenv(o.ab_name.c_str(), kept.c_str(), 1);
        else unsetenv(o.ab_name.c_str());
      };
      if (r % 2 == 0) k(), m(), b();
      else b(), m(), k();
    }
  if (failed != 0) throw std::runtime_error(p.source + " -> " + p.target + ": the kernel returned an error");
  Measured out;
  const double gib = static_cast<double>(bytes) / double(1 << 30);
  for (int threads : o.threads) {
    Timing timing;
    timing.kernel_gibs = gib / median(kernel_s[threads]);
    timing.memcpy_gibs = gib / median(memcpy_s[threads]);
    timing.ratio = timing.kernel_gibs / timing.memcpy_gibs;
    if (o.ab()) timing.ab_ratio = median(memcpy_s[threads]) / median(ab_s[threads]);
    out.timings[threads] = timing;
  }
  const bool under = std::any_of(out.timings.begin(), out.timings.end(), [](const auto& t) { return t.second.ratio < 0.8; });
  // A pair under 0.8x is timed again (--roofline) on a second placement where the arena has room: its
  // buffers taken again past the first, on other physical pages, so that "under 0.8x twice" is the verdict
  // of two placements, not of one timed twice (on 4 KiB pages a pair of scattered writes read up to half
  // apart from one process to the next: bench/README.md, the forty-third session). The 1 GiB headline
  // pairs fill the arena and are timed again in place.
  Side s2, t2;
  const Side* sa = &s;
  const Side* ta = &t;
  char* from_again = from;
  char* to_again = to;
  if (o.roofline && under && arena.room() >= p.arena_bytes) {
    s2 = allocate(sb, 1, arena, o.source_offset);
    t2 = allocate(tb, 2, arena, o.target_offset);
    from_again = arena.take(bytes);
    to_again = arena.take(bytes);
    sa = &s2, ta = &t2;
    out.again_on_other_pages = true;
  }
  auto run_kernel_again = [&](int threads) {
    failed |= kernel(sa->bases.data(), ta->bases.data(), sa->table_bases.data(), ta->table_bases.data(), p.tokens, threads);
  };
  if (out.again_on_other_pages)
    for (int threads : o.threads) run_kernel_again(threads);  // warm, as above
  if (o.roofline && is_runs(p.kind) && under && sb.element_bytes() == tb.element_bytes()) {
    out.replayed = measure_replay(run_kernel_again, sb, tb, *sa, *ta, arena, from_again, to_again, bytes, o);
    if (failed != 0) throw std::runtime_error(p.source + " -> " + p.target + ": the kernel returned an error");
  }
  if (o.roofline && !is_runs(p.kind) && under) {
    // Only rows over the pair's own bytes (the sweep's default size: both are --mib MiB).
    std::set<std::size_t> serving;
    for (const auto& [key, share] : p.ceiling_shares)
      for (std::size_t i : patterns.serving(key))
        if (patterns.rows()[i].bytes == bytes) serving.insert(i);
    std::vector<std::size_t> rows(serving.begin(), serving.end());
    // The runs cells' runs, where the kernel copies elements unchanged: the transposed elements (runs of
    // one) and packs are shorter than the shortest of them and left out.
    std::vector<bench::Run> own_runs;
    if (p.shortest_own_run > 0 && sb.element_bytes() == tb.element_bytes())
      own_runs = bench::observe_runs([&] { run_kernel_again(1); }, regions(sb, *sa), regions(tb, *ta), static_cast<std::size_t>(sb.element_bytes()),
                                     arena.base(), static_cast<std::size_t>(p.shortest_own_run));
    if (!rows.empty() || !own_runs.empty())
      out.beside = measure_beside_patterns(run_kernel_again, patterns, std::move(rows), own_runs, arena, static_cast<std::size_t>(sb.element_bytes()),
                                           from_again, to_again, bytes, o);
    if (failed != 0) throw std::runtime_error(p.source + " -> " + p.target + ": the kernel returned an error");
  }
  return out;
}

// One pattern's row: `move(threads)` against memcpy of the same bytes, interleaved, per thread count.
spec::Json time_pattern(spec::Json row, const std::string& title, const std::function<void(int)>& move, char* to, const char* from, std::size_t bytes,
                        const Options& o) {
  std::printf("pattern: %s", title.c_str());
  for (int threads : o.threads) {
    std::vector<double> moved, plain;
    for (int r = 0; r < o.repetitions; ++r) {
      moved.push_back(seconds_of([&] { move(threads); }));
      plain.push_back(seconds_of([&] { split_memcpy(to, from, bytes, threads); }));
    }
    const double ratio = median(plain) / median(moved);
    row["threads"][std::to_string(threads)] = {{"ratio", ratio}, {"gib_s", static_cast<double>(bytes) / double(1 << 30) / median(moved)}};
    std::printf("  %dT %.2fx of memcpy", threads, ratio);
  }
  std::printf("\n");
  return row;
}

// Phase 0: memcpy against every pattern of the set (pattern_set.hpp), per thread count (interleaved).
spec::Json measure_patterns(const bench::PatternSet& set, Arena& arena, const Options& o) {
  arena.reset();
  char* const from = arena.take(set.bytes());
  char* const to = arena.take(set.bytes());
  spec::Json out = spec::Json::array();
  for (const bench::PatternRow& row : set.rows())
    out.push_back(time_pattern(row.descriptor, row.title, [&](int threads) { row.move(to, from, threads); }, to, from, row.bytes, o));
  return out;
}

// The ceilings of the moves not replayed, per ceiling key (bench::ceiling_key) and thread count, from
// phase 0: the best row (measure_patterns' figures, in the set's order) of those serving the key
// (PatternRow::keys), as a ratio to memcpy. Not a proof: a kernel above its pattern is listed apart
// (kNotACeiling) like any other.
std::map<std::string, std::map<int, double>> pattern_ceilings(const bench::PatternSet& set, const spec::Json& measured) {
  std::map<std::string, std::map<int, double>> out;
  for (std::size_t i = 0; i < set.rows().size(); ++i)
    for (const std::string& key : set.rows()[i].keys)
      for (const auto& [threads, t] : measured[i]["threads"].items()) {
        double& best = out[key][std::stoi(threads)];
        best = std::max(best, t["ratio"].get<double>());
      }
  return out;
}

spec::Json replay_json(const Replayed& r) {
  spec::Json out = {{"runs", r.runs}, {"mean_run_bytes", r.mean_run_bytes}};
  for (const auto& [threads, t] : r.timings)
    out["threads"][std::to_string(threads)] = {{"kernel_gib_s", t.kernel_gibs},
                                               {"memcpy_gib_s", t.memcpy_gibs},
                                               {"target_order_gib_s", t.target_order_gibs},
                                               {"source_order_gib_s", t.source_order_gibs},
                                               {"target_order_four_streams_gib_s", t.target_order_four_gibs},
                                               {"source_order_four_streams_gib_s", t.source_order_four_gibs},
                                               {"replay_ratio", t.replay_ratio()},
                                               {"kernel_of_replay", t.kernel_of_replay()}};
  return out;
}

// --roofline's verdict on the sweep pairs under 0.8x memcpy, per thread count. Each such pair is timed a
// second time, interleaved with memcpy and with what it is held against; where that second, independent
// measurement puts the kernel at 0.8x or more, the pair is listed as at 0.8x when timed again (the two
// measurements disagree: it lies at the threshold within the machine's noise), and counted nowhere else.
// Otherwise: a pair of runs is bound by where its bytes lie when its own runs replayed are under 0.8x too
// and the kernel is within 0.9x of that replay, else by the kernel (listed). A transpose or an
// element-by-element move is held likewise against its ceiling: each share of its elements (ceiling_shares)
// against its key's pattern (the best row serving the key, timed beside it; phase 0's figure where it was
// not), its runs cells' share against their own runs replayed beside it (memcpy where they were not), their
// times added; bound by it when that ceiling is
// under 0.8x and the kernel within 0.9x of it (and not above it by kNotACeiling: then the pattern is no
// ceiling, listed apart); a ceiling under 0.8x is the measured reason that pair cannot reach 0.8x, whatever
// the kernel's distance from it. A move of none of those kinds is counted not_replayed.
class RooflineTally {
 public:
  explicit RooflineTally(std::map<std::string, std::map<int, double>> ceilings) : ceilings_(std::move(ceilings)) {}
  void add(const Pair& p, const Measured& m) {
    const std::string name = p.cache + " " + p.source + " -> " + p.target;
    for (const auto& [threads, t] : m.timings) {
      if (t.ratio >= 0.8) continue;
      Tally& tally = by_threads_[threads];
      const ReplayTiming* r = m.replayed && m.replayed->timings.count(threads) ? &m.replayed->timings.at(threads) : nullptr;
      const BesideTiming* b = m.beside && m.beside->timings.count(threads) ? &m.beside->timings.at(threads) : nullptr;
      const std::string key = bench::ceiling_key(p.kind, p.turn);
      // 0 where it has none (a pair of runs: those are replayed instead).
      const double pair_ceiling = this->pair_ceiling(p, b, threads);
      const double again = r != nullptr ? r->kernel_gibs / r->memcpy_gibs : b != nullptr ? b->kernel_ratio() : 0;
      if (again >= 0.8) {
        tally.at_0_8_again.push_back({{"pair", name}, {"ratio", t.ratio}, {"ratio_again", again}});
      } else if (r != nullptr) {
        tally.kernel_of_replay.push_back(r->kernel_of_replay());
        if (r->replay_ratio() < 0.8 && r->kernel_of_replay() >= 0.9) ++tally.pattern_bound;
        else tally.kernel_bound.push_back(name);
      } else if (pair_ceiling > 0) {
        Held& held = tally.held[key];
        const double kernel = b != nullptr ? b->kernel_ratio() : t.ratio;
        const double of_pattern = kernel / pair_ceiling;
        held.timed_beside += b != nullptr;
        held.kernel_of_pattern.push_back(of_pattern);
        held.pair_ceilings.push_back(pair_ceiling);
        if (of_pattern > kNotACeiling) held.above_pattern.push_back(name);
        else if (pair_ceiling < 0.8 && of_pattern >= 0.9) ++held.bound_by_pattern;
        else held.kernel_bound.push_back(name);
      } else {
        ++tally.not_replayed;
      }
    }
  }
  // The pair's ceiling at `threads` as a ratio to memcpy: each ceiling share's time at its key's pattern
  // (beside the kernel where it was timed so, else phase 0's), the runs cells' share at their own runs
  // replayed beside it (at memcpy's pace where they were not: a higher ceiling, never a false bound); 0
  // where a key has no pattern or every share is the runs cells' (nothing to hold it against).
  double pair_ceiling(const Pair& p, const BesideTiming* b, int threads) const {
    double time = 0;
    bool held = false;
    for (const auto& [key, share] : p.ceiling_shares) {
      if (key == bench::kOwnRunsKey) {
        time += share / (b != nullptr && b->own_runs_ratio > 0 ? b->own_runs_ratio : 1.0);
        continue;
      }
      const auto phase0 = ceilings_.find(key);
      double pattern = 0;
      if (b != nullptr && b->best_by_key.count(key)) pattern = b->best_by_key.at(key);
      else if (phase0 != ceilings_.end() && phase0->second.count(threads)) pattern = phase0->second.at(threads);
      if (pattern <= 0) return 0;
      time += share / pattern;
      held = true;
    }
    return held ? 1 / time : 0;
  }
  spec::Json report() const {
    spec::Json out = spec::Json::object();
    for (const auto& [threads, tally] : by_threads_) {
      std::vector<double> v = tally.kernel_of_replay;
      std::sort(v.begin(), v.end());
      std::size_t under = tally.pattern_bound + tally.kernel_bound.size() + tally.not_replayed + tally.at_0_8_again.size();
      spec::Json held_json = spec::Json::object();
      for (const auto& [kind, held] : tally.held) {
        std::vector<double> w = held.kernel_of_pattern, c = held.pair_ceilings;
        std::sort(w.begin(), w.end());
        std::sort(c.begin(), c.end());
        under += w.size();
        const double ceiling = ceilings_.at(kind).at(threads);
        held_json[kind] = {{"pattern_ratio", ceiling},
                           {"timed_beside", held.timed_beside},
                           {"pair_ceiling_min", c.front()},
                           {"pair_ceiling_median", median(c)},
                           {"bound_by_pattern", held.bound_by_pattern},
                           {"kernel_bound", held.kernel_bound},
                           {"above_pattern", held.above_pattern},
                           {"kernel_of_pattern_min", w.front()},
                           {"kernel_of_pattern_median", median(w)}};
        std::printf("roofline %dT: %zu %s under 0.8x twice against their pattern (%.2fx of memcpy in phase 0, %zu timed beside it; with their runs "
                    "cells at their own runs replayed and their 16-byte packs at the pack transpose, ceilings median %.2f), kernel/ceiling min "
                    "%.2f median %.2f; %zu bound by it (ceiling under 0.8x, kernel within 0.9x of it), %zu by the kernel, %zu above it (no ceiling)\n",
                    threads, w.size(), kind.c_str(), ceiling, held.timed_beside, median(c), w.front(), median(w), held.bound_by_pattern,
                    held.kernel_bound.size(), held.above_pattern.size());
        for (const std::string& name : held.kernel_bound) std::printf("    kernel-bound %s: %s\n", kind.c_str(), name.c_str());
      }
      out[std::to_string(threads)] = {{"under_0_8", under},
                                      {"at_0_8_when_timed_again", tally.at_0_8_again},
                                      {"pattern_bound", tally.pattern_bound},
                                      {"kernel_bound", tally.kernel_bound},
                                      {"not_replayed", tally.not_replayed},
                                      {"kernel_of_replay_min", v.empty() ? 0.0 : v.front()},
                                      {"kernel_of_replay_median", median(v)},
                                      {"held_against_patterns", held_json}};
      std::printf("roofline %dT: %zu pairs under 0.8x, %zu of them at 0.8x or more when timed again\n", threads, under, tally.at_0_8_again.size());
      for (const spec::Json& a : tally.at_0_8_again)
        std::printf("    at 0.8x again: %s (%.2fx, then %.2fx)\n", a["pair"].get<std::string>().c_str(), a["ratio"].get<double>(),
                    a["ratio_again"].get<double>());
      std::printf("roofline %dT: %zu pairs of runs under 0.8x twice, replayed, kernel/replay min %.2f median %.2f; %zu bound by their own runs "
                  "(replay under 0.8x, kernel within 0.9x of it), %zu by the kernel; %zu neither replayed nor held against a pattern\n",
                  threads, v.size(), v.empty() ? 0.0 : v.front(), median(v), tally.pattern_bound, tally.kernel_bound.size(), tally.not_replayed);
      for (const std::string& name : tally.kernel_bound) std::printf("    kernel-bound: %s\n", name.c_str());
    }
    return out;
  }

 private:
  // A kernel this far above its pattern shows the pattern is not the best code for that move (it is bare
  // code written here), not that the kernel is bound: listed apart, never counted as bound.
  static constexpr double kNotACeiling = 1.1;
  struct Held {
    std::size_t bound_by_pattern = 0, timed_beside = 0;
    std::vector<std::string> kernel_bound, above_pattern;
    std::vector<double> kernel_of_pattern, pair_ceilings;  // the kernel over its pair's ceiling, and that ceiling
  };
  struct Tally {
    std::size_t pattern_bound = 0, not_replayed = 0;
    std::vector<std::string> kernel_bound;
    std::vector<spec::Json> at_0_8_again;  // {pair, ratio, ratio_again}
    std::vector<double> kernel_of_replay;
    std::map<std::string, Held> held;
  };
  std::map<std::string, std::map<int, double>> ceilings_;
  std::map<int, Tally> by_threads_;
};

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    out.push_back(std::max(1, std::atoi(list.substr(at, comma - at).c_str())));
    at = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kvlayout_bench_sweep: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--mib") o.mib = std::atoll(next().c_str());
    else if (a == "--headline-mib") o.headline_mib = std::atoll(next().c_str());
    else if (a == "--repetitions") o.repetitions = std::max(1, std::atoi(next().c_str()));
    else if (a == "--threads") o.threads = parse_threads(next());
    else if (a == "--filter") o.filter = next();
    else if (a == "--json") o.json = next();
    else if (a == "--workdir") o.workdir = next();
    else if (a == "--jobs") o.jobs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--hugepages") o.hugepages = true;
    else if (a == "--source") o.replacement = next();
    else if (a == "--ab-source") o.ab_replacement = next();
    else if (a == "--isa-ab") o.ab_name = "KVLAYOUT_ISA", o.ab_value = "baseline";
    else if (a == "--ab") {
      const std::string v = next();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "kvlayout_bench_sweep: --ab needs NAME=VALUE (e.g. KVLAYOUT_STAGE=off), got '" << v << "'\n";
        std::exit(2);
      }
      o.ab_name = v.substr(0, eq), o.ab_value = v.substr(eq + 1);
      const std::vector<std::string> choices = emit::cpu_choice_variables();
      if (o.ab_name != "KVLAYOUT_ISA" && std::find(choices.begin(), choices.end(), o.ab_name) == choices.end()) {
        std::cerr << "kvlayout_bench_sweep: --ab " << o.ab_name << ": no kernel reads it; expected KVLAYOUT_ISA or one of";
        for (const std::string& name : choices) std::cerr << ' ' << name;
        std::cerr << '\n';
        std::exit(2);
      }
    }
    else if (a == "--headline-only") o.headline_only = true;
    else if (a == "--against") o.against = next();
    else if (a == "--roofline") o.roofline = true;
    else if (a == "--source-offset" || a == "--target-offset") {
      const std::string value = next();
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || n < 0 || n >= 4096) {
        std::cerr << "kvlayout_bench_sweep: " << a << " takes a byte count in 0..4095, not '" << value << "'\n";
        std::exit(2);
      }
      (a == "--source-offset" ? o.source_offset : o.target_offset) = n;
    }
    else {
      std::cerr << "usage: kvlayout_bench_sweep [--mib N] [--headline-mib N] [--repetitions N] [--threads 1,2] [--filter TEXT]\n"
                   "                            [--hugepages] [--json FILE] [--workdir DIR] [--jobs N] [--source FILE] [--isa-ab]\n"
                   "                            [--ab NAME=VALUE | --ab-source FILE]\n"
                   "                            [--headline-only] [--roofline] [--source-offset N] [--target-offset N]\n"
                   "                            [--against EARLIER.json]\n";
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  if (!o.ab_name.empty() && !o.ab_replacement.empty()) {
    std::cerr << "kvlayout_bench_sweep: --ab and --ab-source each fill the same third slot; give one of them\n";
    std::exit(2);
  }
  return o;
}

}  // namespace

int run_sweep(const Options& o);

// glibc's memcpy switches to streaming stores above x86_non_temporal_threshold, which it derives from the
// L3 size it reads; this VM reports a 480 MiB L3, so the threshold is 190 MiB and a 2-thread memcpy of
// 256 MiB (128 MiB a thread) took the cached path: 12.1 GiB/s against 18.4 streaming (vllm-flash-nhd ->
// vllm-flash-hnd at 2 threads then read 1.56x of memcpy, 1.04x against the streaming one). The baseline
// is memcpy as glibc runs it where the L3 is of an ordinary size: streaming from the size the kernels
// stream from (emit::EmitOptions::streaming_from_bytes), set by running this program again with the
// tunable. A GLIBC_TUNABLES that names the threshold already is left as it is.
void stream_memcpy_as_the_kernels_do(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "x86_non_temporal_threshold") != nullptr) return;
  const std::string value = (tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : std::string()) +
                            "glibc.cpu.x86_non_temporal_threshold=" + std::to_string(emit::EmitOptions{}.streaming_from_bytes);
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "kvlayout_bench_sweep: could not run again with %s (memcpy keeps glibc's own threshold)\n", value.c_str());
}

// The tunable memcpy runs under, for the record ("" when glibc's own threshold).
std::string memcpy_tunables() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr ? tunables : "";
}

// The CPU the figures are of, for the record: the kernels' per-call choices differ by it (emit/cpu_choices.hpp:
// AMD without AVX-512, AMD with it, the rest; one choice also by model), and the environment can force each
// of them.
spec::Json cpu_record() {
  const char* vendor = __builtin_cpu_is("intel") ? "intel" : __builtin_cpu_is("amd") ? "amd" : "other";
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  int family = -1, model = -1;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0) {  // the displayed family and model, as /proc/cpuinfo shows them
    const unsigned base_family = (eax >> 8) & 0xf, base_model = (eax >> 4) & 0xf;
    family = static_cast<int>(base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family);
    model = static_cast<int>(base_family == 0x6 || base_family == 0xf ? base_model + (((eax >> 16) & 0xf) << 4) : base_model);
  }
  spec::Json forced = spec::Json::object();
  std::vector<std::string> names = emit::cpu_choice_variables();
  names.insert(names.begin(), "KVLAYOUT_ISA");
  for (const std::string& name : names)
    if (const char* value = std::getenv(name.c_str()); value != nullptr) forced[name] = value;
  return {{"vendor", vendor},
          {"family", family},
          {"model", model},
          {"avx2", static_cast<bool>(__builtin_cpu_supports("avx2"))},
          {"avx512", __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")},
          {"forced_choices", forced}};
}

int main(int argc, char** argv) {
  stream_memcpy_as_the_kernels_do(argv);
  const Options o = parse(argc, argv);
  try {
    return run_sweep(o);
  } catch (const std::exception& e) {  // bad --source or --filter, a kernel that does not compile
    std::cerr << "kvlayout_bench_sweep: " << e.what() << "\n";
    return 2;
  }
}

// The --against file, read and checked before the sweep's minutes are spent; null without --against.
// @throws std::runtime_error naming the file and what is wrong with it.
std::unique_ptr<spec::Json> read_reference(const Options& o) {
  if (o.against.empty()) return nullptr;
  try {
    auto reference = std::make_unique<spec::Json>(spec::read_json_file(o.against));
    bench::compare_against(spec::Json::array(), *reference);  // throws where it is not a sweep's JSON
    return reference;
  } catch (const std::exception& e) {
    throw std::runtime_error("--against " + o.against + ": " + e.what());
  }
}

// What --against prints: the drift, the changed kernels against it, and the changed pairs at either end.
void print_against(const bench::Against& a, const std::string& file) {
  std::printf("against %s (ratio now over then, geometric means; %zu pairs new):\n", file.c_str(), a.new_pairs);
  for (const auto& [threads, t] : a.threads) {
    std::printf("  %dT: %zu pairs of unchanged kernels %.3fx (the drift), %zu of changed kernels %.3fx, %.3fx over the drift", threads,
                t.unchanged.pairs, t.unchanged.geometric_mean, t.changed.pairs, t.changed.geometric_mean, t.changed_over_drift);
    if (t.unknown.pairs > 0) std::printf(", %zu with no digest in the reference %.3fx", t.unknown.pairs, t.unknown.geometric_mean);
    std::printf("; %zu under 0.8x, %zu at the reference's state\n", t.below_0_8, t.below_0_8_at_reference_state);
  }
  const std::size_t shown = std::min<std::size_t>(a.changed.size(), 8);
  auto print_pair = [](const bench::ChangedPair& c) {
    std::printf("    %-70s", c.name.c_str());
    for (const auto& [threads, r] : c.over_drift) std::printf("  %dT %.2fx", threads, r);
    std::printf("\n");
  };
  if (shown > 0) std::printf("  changed kernels, slowest and fastest against the drift:\n");
  for (std::size_t i = 0; i < shown; ++i) print_pair(a.changed[i]);
  for (std::size_t i = std::max(shown, a.changed.size() - shown); i < a.changed.size(); ++i) print_pair(a.changed[i]);
}

int run_sweep(const Options& o) {
  const std::unique_ptr<spec::Json> reference = read_reference(o);
  const spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Pair> pairs = exact_pairs(catalog, o);
  const auto distinct = std::count_if(pairs.begin(), pairs.end(), [](const Pair& p) { return p.same_as < 0; });
  std::fprintf(stderr, "sweep: %zu exact pairs, %ld distinct kernels; compiling them\n", pairs.size(), static_cast<long>(distinct));
  std::fprintf(stderr, "sweep: %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const auto library = compile(pairs, o);
  // With --source, the pairs' code is the file's (its kernel is k0, as the one pair selected names it).
  const std::string replaced_digest = o.replacement.empty() ? "" : emit::kernel_code_digest(hand_edited_kernel(pairs, 1, o.replacement, "--source"), "k0");
  const auto ab_library = compile_ab_source(pairs, o);
  const spec::Json stores = store_order(*library, pairs);
  std::size_t arena_bytes = 0;
  // With --roofline, room for a second placement of each pair cut to --mib (measure's again-timings); the
  // headline pairs, four times larger, are timed again in place.
  for (const Pair& p : pairs) arena_bytes = std::max(arena_bytes, (o.roofline && !p.headline ? 2 : 1) * p.arena_bytes);
  arena_bytes = std::max(arena_bytes, (static_cast<std::size_t>(o.mib) << 21) + 8192);
  Arena arena(arena_bytes, o.hugepages);
  std::fprintf(stderr, "sweep: compiled, %.0f s; arena %.0f MiB\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               static_cast<double>(arena_bytes) / (1 << 20));
  const bench::PatternSet pattern_set(static_cast<std::size_t>(o.mib) << 20);
  const spec::Json patterns = measure_patterns(pattern_set, arena, o);
  spec::Json rows = spec::Json::array();
  std::map<int, std::vector<double>> ratios;  // sweep pairs only, per thread count
  std::map<int, std::vector<double>> default_over_ab;  // with --ab: each distinct kernel's time with NAME=VALUE over without
  std::map<std::string, std::map<int, std::vector<double>>> by_kind;
  std::vector<Measured> timed(pairs.size());
  RooflineTally roofline(pattern_ceilings(pattern_set, patterns));
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.same_as >= 0) {
      timed[i] = timed[static_cast<std::size_t>(p.same_as)];
    } else {
      const auto kernel = library->find(p.kernel);
      if (kernel == nullptr)
        throw std::runtime_error("no function " + p.kernel + " in the compiled kernels" + (o.replacement.empty() ? "" : " (--source " + o.replacement + ")"));
      native::RelayoutKernel ab_kernel = nullptr;
      if (ab_library != nullptr && (ab_kernel = ab_library->find(p.kernel)) == nullptr)
        throw std::runtime_error("no function " + p.kernel + " in --ab-source " + o.ab_replacement);
      timed[i] = measure(p, kernel, ab_kernel, pattern_set, arena, o);
    }
    const auto& timings = timed[i].timings;
    spec::Json row = {{"cache", p.cache}, {"source", p.source}, {"target", p.target}, {"grade", p.grade},
                      {"tokens", p.tokens}, {"headline", p.headline}, {"kind", p.kind}};
    if (!p.turn.empty()) row["turn"] = p.turn;
    row["pattern_share"] = p.pattern_share();
    row["ceiling_shares"] = p.ceiling_shares;
    row["kernel_digest"] = replaced_digest.empty() ? p.digest : replaced_digest;
    if (p.same_as >= 0)
      row["same_kernel_as"] = pairs[static_cast<std::size_t>(p.same_as)].source + " -> " + pairs[static_cast<std::size_t>(p.same_as)].target;
    std::printf("%-12s %-26s -> %-26s %5lld tok", p.cache.c_str(), p.source.c_str(), p.target.c_str(), static_cast<long long>(p.tokens));
    for (const auto& [threads, t] : timings) {
      row["threads"][std::to_string(threads)] = {{"kernel_gib_s", t.kernel_gibs}, {"memcpy_gib_s", t.memcpy_gibs}, {"ratio", t.ratio}};
      std::printf("  %dT %5.2f GiB/s %.2fx", threads, t.kernel_gibs, t.ratio);
      if (o.ab()) {
        // baseline_ratio: the name --isa-ab's rows have always had.
        row["threads"][std::to_string(threads)][o.ab_name == "KVLAYOUT_ISA" && o.ab_value == "baseline" ? "baseline_ratio" : "ab_ratio"] = t.ab_ratio;
        std::printf(" (%s %.2fx)", o.ab_label().c_str(), t.ab_ratio);
        if (!p.headline && p.same_as < 0) default_over_ab[threads].push_back(t.ratio / t.ab_ratio);
      }
      if (!p.headline) ratios[threads].push_back(t.ratio), by_kind[p.kind][threads].push_back(t.ratio);
    }
    std::printf("%s%s\n", p.headline ? "  (headline)" : "", p.same_as >= 0 ? "  (same kernel as an earlier pair)" : "");
    if (timed[i].replayed || timed[i].beside) row["timed_again_on_other_pages"] = timed[i].again_on_other_pages;
    if (timed[i].replayed) {
      const Replayed& r = *timed[i].replayed;
      row["replay"] = replay_json(r);
      std::printf("    replay: %zu runs of %.0f B on average;", r.runs, r.mean_run_bytes);
      for (const auto& [threads, t] : r.timings)
        std::printf("  %dT replay %.2fx of memcpy, kernel %.2fx of replay", threads, t.replay_ratio(), t.kernel_of_replay());
      std::printf("\n");
    }
    if (timed[i].beside) {
      const Beside& b = *timed[i].beside;
      spec::Json beside = {{"patterns", spec::Json::array()}, {"own_runs", b.own_runs}, {"own_runs_bytes", b.own_runs_bytes}};
      for (std::size_t r : b.rows) beside["patterns"].push_back(pattern_set.rows()[r].descriptor);
      std::printf("    beside its patterns:");
      for (const auto& [threads, t] : b.timings) {
        beside["threads"][std::to_string(threads)] = {{"kernel_gib_s", t.kernel_gibs},       {"memcpy_gib_s", t.memcpy_gibs},
                                                      {"ratio", t.kernel_ratio()},          {"pattern_ratios", t.pattern_ratios},
                                                      {"best_pattern_ratio", t.best_pattern()}, {"own_runs_ratio", t.own_runs_ratio},
                                                      {"pair_ceiling", roofline.pair_ceiling(p, &t, threads)}};
        std::printf("  %dT kernel %.2fx, best pattern %.2fx", threads, t.kernel_ratio(), t.best_pattern());
        if (b.own_runs > 0) std::printf(", own runs %.2fx", t.own_runs_ratio);
        std::printf(", pair ceiling %.2fx of memcpy", roofline.pair_ceiling(p, &t, threads));
      }
      if (b.own_runs > 0) std::printf(" (%zu own runs of %.0f B on average)", b.own_runs, static_cast<double>(b.own_runs_bytes) / static_cast<double>(b.own_runs));
      std::printf("\n");
      row["beside_patterns"] = beside;
    }
    if (!p.headline) roofline.add(p, timed[i]);
    std::fflush(stdout);
    rows.push_back(row);
    std::fprintf(stderr, "\rsweep: %zu / %zu pairs, %.0f s", i + 1, pairs.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::fprintf(stderr, "\n");
  spec::Json summary = spec::Json::object();
  for (auto& [threads, v] : ratios) {
    std::sort(v.begin(), v.end());
    const auto below = std::count_if(v.begin(), v.end(), [](double r) { return r < 0.8; });
    summary[std::to_string(threads)] = {{"pairs", v.size()}, {"min", v.front()}, {"median", median(v)}, {"max", v.back()}, {"below_0_8", below}};
    std::printf("threads %d: %zu pairs, ratio to memcpy min %.2f median %.2f max %.2f, %ld below 0.8\n", threads, v.size(), v.front(),
                median(v), v.back(), static_cast<long>(below));
  }
  spec::Json kinds = spec::Json::object();
  for (auto& [kind, per_threads] : by_kind) {
    std::printf("  %-20s", kind.c_str());
    for (auto& [threads, v] : per_threads) {
      std::sort(v.begin(), v.end());
      const auto below = std::count_if(v.begin(), v.end(), [](double r) { return r < 0.8; });
      kinds[kind][std::to_string(threads)] = {{"pairs", v.size()}, {"min", v.front()}, {"median", median(v)}, {"below_0_8", below}};
      std::printf("  %dT %3zu pairs min %.2f median %.2f, %3ld below 0.8", threads, v.size(), v.front(), median(v), static_cast<long>(below));
    }
    std::printf("\n");
  }
  summary["by_kind"] = kinds;
  if (o.ab()) {
    // With --ab: per thread count, how the kernels as they run by default compare with NAME=VALUE (above 1:
    // the default is faster), each distinct kernel once; with --ab-source, with that file's kernel.
    spec::Json ab = o.ab_replacement.empty() ? spec::Json{{"name", o.ab_name}, {"value", o.ab_value}} : spec::Json{{"source", o.ab_replacement}};
    for (auto& [threads, v] : default_over_ab) {
      std::sort(v.begin(), v.end());
      const auto faster = std::count_if(v.begin(), v.end(), [](double r) { return r > 1; });
      ab[std::to_string(threads)] = {{"kernels", v.size()}, {"min", v.front()}, {"median", median(v)}, {"max", v.back()}, {"default_faster", faster}};
      std::printf("%s%s %dT: %zu kernels, default over it min %.2f median %.2f max %.2f, default faster in %ld\n", o.ab_replacement.empty() ? "--ab " : "",
                  o.ab_label().c_str(), threads, v.size(), v.front(), median(v), v.back(), static_cast<long>(faster));
    }
    summary["ab"] = ab;
  }
  if (o.roofline) summary["roofline"] = roofline.report();
  if (reference != nullptr) {
    const bench::Against against = bench::compare_against(rows, *reference);
    print_against(against, o.against);
    summary["against"] = bench::against_json(against);
  }
  if (!o.json.empty())
    std::ofstream(o.json) << spec::Json{{"mib", o.mib},
                                        {"headline_mib", o.headline_mib},
                                        {"repetitions", o.repetitions},
                                        {"hugepages", o.hugepages},
                                        {"memcpy_glibc_tunables", memcpy_tunables()},
                                        {"cpu", cpu_record()},
                                        {"patterns", patterns},
                                        {"store_order", stores},
                                        {"pairs", rows},
                                        {"summary", summary}}
                                 .dump(2)
                          << "\n";
  return 0;
}

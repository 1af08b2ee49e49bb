#include "emit/kernel_fixture.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "emit/cpu_choices.hpp"
#include "enumerate/patterns.hpp"
#include "layout/block_tables.hpp"
#include "enumerate/reference_move.hpp"
#include "enumerate/storage.hpp"
#include "support/run_command.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout::test {

std::vector<std::string> isa_variants() {
  std::vector<std::string> out{"baseline"};
  // scripts/sanitize.sh sets this: the kernels are not instrumented, so running each variant again under
  // ASan checks nothing new (the instrumented oracle and generator run once per kernel either way).
  if (const char* only = std::getenv("KVLAYOUT_TEST_ISA_VARIANTS"); only != nullptr && std::string(only) == "baseline") return out;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) out.push_back("avx2");  // the AVX2 variant alone (KVLAYOUT_ISA=avx2)
  // The AVX2 variant with its AVX-512 transposes (kv_use_avx512 in emit/cpu.cpp), where the CPU has them.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) out.push_back("avx512");
#endif
  return out;
}

std::size_t pair_sample() {
  // scripts/sanitize.sh sets this: there every pair's kernel would be compiled again (by the uninstrumented
  // compiler) and run against the instrumented oracle at ~10x its cost; one pair in N keeps the generator and
  // oracle under ASan on every kind of kernel. The plain suite runs every pair.
  if (const char* n = std::getenv("KVLAYOUT_TEST_PAIR_SAMPLE"); n != nullptr) {
    const long v = std::strtol(n, nullptr, 10);
    if (v > 1) return static_cast<std::size_t>(v);
  }
  return 1;
}

ScopedIsa::ScopedIsa(const std::string& variant) : ScopedIsa(variant, variant != "baseline") {}
ScopedIsa::ScopedIsa(const std::string& variant, bool staged) : ScopedIsa(variant, staged, variant != "baseline") {}
ScopedIsa::ScopedIsa(const std::string& variant, bool staged, bool second_orders)
    : ScopedIsa(variant, staged, second_orders, variant != "baseline") {}
ScopedIsa::ScopedIsa(const std::string& variant, bool staged, bool second_orders, bool blocks_at_once) {
  setenv("KVLAYOUT_ISA", variant.c_str(), 1);
  for (const std::string& name : emit::cpu_choice_variables()) {
    bool on = false;
    switch (emit::test_switch_of(name)) {
      case emit::ChoiceTestSwitch::prefetches: on = variant == "baseline"; break;
      case emit::ChoiceTestSwitch::staged: on = staged; break;
      case emit::ChoiceTestSwitch::second_orders: on = second_orders; break;
      case emit::ChoiceTestSwitch::blocks_at_once: on = blocks_at_once; break;
    }
    setenv(name.c_str(), on ? "on" : "off", 1);
  }
}
ScopedIsa::~ScopedIsa() {
  unsetenv("KVLAYOUT_ISA");
  for (const std::string& name : emit::cpu_choice_variables()) unsetenv(name.c_str());
}

std::vector<std::vector<std::int32_t>> int32_tables(const enumerate::Enumerated& e, std::size_t k) {
  return layout::int32_entries(*e.bound, e.tables[k]);
}

namespace {

std::vector<std::pair<const void*, std::size_t>> table_spans(const std::vector<std::vector<std::int32_t>>& tables) {
  std::vector<std::pair<const void*, std::size_t>> spans;
  for (const auto& t : tables) spans.emplace_back(t.data(), t.size() * sizeof(std::int32_t));
  return spans;
}

std::vector<std::pair<const void*, std::size_t>> buffer_spans(const enumerate::Storage& storage) {
  std::vector<std::pair<const void*, std::size_t>> spans;
  for (const auto& buffer : storage.buffers()) spans.emplace_back(buffer.data(), buffer.size());
  return spans;
}

// Copies of the poisoned target buffers, each at `shift` past the source (or a page) modulo 4 KiB.
class ShiftedTargets {
 public:
  ShiftedTargets(const std::vector<std::pair<const void*, std::size_t>>& spans, std::uintptr_t source_at, std::size_t shift) {
    for (const auto& [data, bytes] : spans) {
      copies_.emplace_back(bytes + 8192);
      const auto start = reinterpret_cast<std::uintptr_t>(copies_.back().data());
      char* at = copies_.back().data() + (source_at + shift - start) % 4096;
      std::memcpy(at, data, bytes);
      pointers_.push_back(at);
    }
  }
  const std::vector<void*>& pointers() const { return pointers_; }

 private:
  std::vector<std::vector<char>> copies_;
  std::vector<void*> pointers_;
};

}  // namespace

Fenced::Fenced(const std::vector<std::pair<const void*, std::size_t>>& spans, std::size_t align, FenceAt at) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  for (const auto& [data, bytes] : spans) {
    const std::size_t placed = (bytes + align - 1) / align * align, data_pages = (placed + page - 1) / page + 1;
    const std::size_t mapped = (data_pages + 1) * page;
    void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("Fenced: mmap failed");
    mappings_.push_back({base, mapped});
    // The fence: the last page (the span ends where it begins) or the first (the span begins where it ends).
    char* fence = at == FenceAt::end ? static_cast<char*>(base) + data_pages * page : static_cast<char*>(base);
    if (mprotect(fence, page, PROT_NONE) != 0) throw std::runtime_error("Fenced: mprotect failed");
    char* first = at == FenceAt::end ? fence - placed : fence + page;
    if (bytes > 0) std::memcpy(first, data, bytes);
    pointers_.push_back(first);
  }
}

Fenced::~Fenced() {
  for (const Mapping& m : mappings_) munmap(m.base, m.bytes);
}

FencedTables::FencedTables(const std::vector<std::vector<std::int32_t>>& tables, FenceAt at) : copies_(table_spans(tables), sizeof(std::int32_t), at) {
  for (void* p : copies_.pointers()) pointers_.push_back(static_cast<const std::int32_t*>(p));
}

KernelRun run_against_oracle(Kernel kernel, const enumerate::Enumerated& S, const enumerate::Enumerated& T, std::size_t k,
                             std::int64_t num_tokens, int threads, const Placement& placement) {
  enumerate::Storage src(*S.bound, S.maps[k]), dst(*T.bound, T.maps[k]), expected(*T.bound, T.maps[k]);
  const enumerate::Patterns ps = enumerate::patterns_for(S.layout->dtype), pt = enumerate::patterns_for(T.layout->dtype);
  for (std::int64_t e = 0; e < src.elements(); ++e)
    src.set(e, ps.safe[static_cast<std::size_t>((e * 7919 + 13) % static_cast<std::int64_t>(ps.safe.size()))]);
  dst.fill(pt.poison);
  expected.fill(pt.poison);
  KernelRun run;
  run.moved = enumerate::reference_move(S, T, k, num_tokens, src, expected);
  const FenceAt at = placement.fence.value_or(k % 2 == 1 ? FenceAt::start : FenceAt::end);
  const FencedTables st(int32_tables(S, k), at), dt(int32_tables(T, k), at);
  const std::vector<const std::int32_t*>&stp = st.pointers(), &dtp = dt.pointers();
  // Buffers placed as enumerate::Storage's start (64-byte aligned) or page-aligned.
  const Fenced source(buffer_spans(src), 64, at);
  std::vector<void*> sp = source.pointers();
  const bool shifted = placement.target_shift > 0;
  const std::vector<std::pair<const void*, std::size_t>> none;
  const Fenced fenced_targets(shifted ? none : buffer_spans(dst), 64, at);
  const ShiftedTargets shifted_targets(shifted ? buffer_spans(dst) : none, placement.shift_past_page ? 0 : reinterpret_cast<std::uintptr_t>(sp.at(0)),
                                       placement.target_shift);
  std::vector<void*> dp = shifted ? shifted_targets.pointers() : fenced_targets.pointers();
  run.code = kernel(sp.data(), dp.data(), stp.empty() ? nullptr : stp.data(), dtp.empty() ? nullptr : dtp.data(), num_tokens, threads);
  for (std::size_t b = 0; b < dst.buffers().size(); ++b) {
    const char* got = static_cast<const char*>(dp.at(b));
    for (std::size_t i = 0; i < dst.buffers()[b].size(); ++i) run.wrong_bytes += got[i] != static_cast<char>(expected.buffers()[b][i]);
  }
  return run;
}

}  // namespace kvlayout::test

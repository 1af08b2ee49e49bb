// Every emitted CPU kernel of the shipped specs, compiled and run against the byte oracle: destination
// poisoned first, every byte compared (padding and positions outside the domain must stay poison), under
// identity, reversed and random block tables, for full and partial token counts and 1 or 3 threads; and
// every kernel refuses bad input without writing. Each kernel runs in every instruction-set variant it
// carries that this CPU has (baseline SSE2, AVX2).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "certificate/matrix.hpp"
#include "emit/code_key.hpp"
#include "emit/cpu_choices.hpp"
#include "emit/emit.hpp"
#include "emit/kernel_fixture.hpp"
#include "emit/plan.hpp"
#include "enumerate/patterns.hpp"
#include "enumerate/storage.hpp"
#include "native/streaming_store_order.hpp"
#include "prove/side_cache.hpp"
#include "spec/catalog.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

// A control's two runs on one table choice and token count: the kernel as emitted moves exactly the
// oracle's bytes, the broken one (a hand mutation of it) moves some wrong.
void check_control(const test::KernelLibrary& library, const std::string& good_name, const std::string& broken_name,
                   const enumerate::Enumerated& S, const enumerate::Enumerated& T, std::size_t tables, std::int64_t n) {
  test::KernelRun good = test::run_against_oracle(library.find(good_name), S, T, tables, n, 1);
  CHECK(good.code == 0);
  CHECK(good.wrong_bytes == 0);
  CHECK(good.moved > 0);
  test::KernelRun bad = test::run_against_oracle(library.find(broken_name), S, T, tables, n, 1);
  CHECK(bad.code == 0);
  CHECK(bad.wrong_bytes > 0);
}

// Whether this CPU runs the kernels' AVX2 variant (not isa_variants(): a control of that variant alone
// runs wherever the CPU has it, even where the suite runs one variant).
bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// A control's setup on the small cache: a shipped pair's proof and its CPU kernel emitted twice, under
// `good_name` as it is and under `broken_name` for the test to break.
struct ControlKernels {
  spec::CacheShape cache;
  std::shared_ptr<const spec::Layout> source, target;
  std::string good_name, broken_name;
  std::string good, broken;
};

ControlKernels control_kernels(const std::string& source, const std::string& target, const std::string& good_name,
                               const std::string& broken_name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  ControlKernels c{spec::load_cache(catalog.find_cache("small").string()), spec::load_layout(catalog.find_layout(source).string()),
                   spec::load_layout(catalog.find_layout(target).string()), good_name, broken_name, {}, {}};
  const prove::Proof p = prove::prove(c.source, c.target, c.cache);
  emit::EmitOptions o;
  o.name = good_name;
  c.good = emit::emit_kernel(p, o);
  o.name = broken_name;
  c.broken = emit::emit_kernel(p, o);
  return c;
}

// check_control for both kernels of `c` under every table choice, moving `num_tokens`, in every
// instruction-set variant where `every_variant`, else in the default one; with the staged bursts
// (KVLAYOUT_STAGE) as `staged` says where given, else as test::ScopedIsa sets them per variant.
void check_controls(const ControlKernels& c, bool every_variant, std::int64_t num_tokens, std::optional<bool> staged = std::nullopt) {
  test::TempDir dir;
  test::KernelLibrary library({c.good, c.broken}, dir.path().string());
  const auto S = enumerate::enumerate_layout(c.source, c.cache), T = enumerate::enumerate_layout(c.target, c.cache);
  const std::vector<std::string> variants = every_variant ? test::isa_variants() : std::vector<std::string>{""};
  for (std::size_t k = 0; k < 3; ++k) {
    INFO(enumerate::table_choice_name(k) << " tables");
    for (const std::string& variant : variants) {
      INFO(variant << " variant");
      std::optional<test::ScopedIsa> isa;
      if (!variant.empty() && staged) isa.emplace(variant, *staged);
      else if (!variant.empty()) isa.emplace(variant);
      check_control(library, c.good_name, c.broken_name, S, T, k, num_tokens);
    }
  }
}

// LMCache's two-tier cache into vLLM's flash cache on the small shape with head_size 128: each block of 16
// tokens x 4 heads x 128 dims is one 16 KiB run, read in the source's order and copied whole (blocks of up
// to 8 KiB are copied four at a time instead: see the test of whole blocks copied four at a time).
struct SixteenKibRuns {
  prove::Proof proof;
  enumerate::Enumerated source, target;
};
SixteenKibRuns sixteen_kib_runs() {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  spec::CacheShape cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 128;
  const auto source = spec::load_layout(catalog.find_layout("lmcache-2ltd").string());
  const auto target = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  return {prove::prove(source, target, cache), enumerate::enumerate_layout(source, cache), enumerate::enumerate_layout(target, cache)};
}

// `small` with 32-element heads (four x-packs of the legacy key) and 48 tokens (three 16-slot blocks, cut
// inside a 64-slot page): the shape the legacy cache's pack tests move.
spec::CacheShape legacy_pack_cache(const spec::Catalog& catalog) {
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 32;
  cache.params["num_tokens"] = 48;
  return cache;
}

// The wait status of a forked child that runs `work` and then exits 0: a fence's fault shows as
// WIFSIGNALED with SIGSEGV. The child takes SIGSEGV's default action, not a sanitizer's handler
// (scripts/sanitize.sh), so that it dies of the signal.
int status_in_child(const std::function<void()>& work) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    signal(SIGSEGV, SIG_DFL);
    work();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return status;
}

// vLLM's legacy cache declared with blocks of `slots` slots (named vllm-paged-legacy-SLOTS), written into
// `dir` and loaded from there.
std::shared_ptr<const spec::Layout> legacy_with_blocks(const spec::Catalog& catalog, const test::TempDir& dir, int slots) {
  std::ifstream in(catalog.find_layout("vllm-paged-legacy"));
  auto declaration = nlohmann::json::parse(in);
  declaration["name"] = "vllm-paged-legacy-" + std::to_string(slots);
  declaration["params"]["block_size"] = slots;
  const auto path = dir.path() / ("vllm-paged-legacy-" + std::to_string(slots) + ".json");
  std::ofstream(path) << declaration.dump(2);
  return spec::load_layout(path.string());
}

// A control: the kernel of `proof` as `o` emits it, named `name`, with every `from` replaced by `to`, as
// often in each instruction-set variant (once or more: once per cell that prints it).
std::string broken_kernel(const prove::Proof& proof, emit::EmitOptions o, const std::string& name, const std::string& from, const std::string& to) {
  o.name = name;
  std::string text = emit::emit_kernel(proof, o);
  std::size_t replaced = 0;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()), ++replaced) text.replace(at, from.size(), to);
  REQUIRE(replaced >= 2);
  REQUIRE(replaced % 2 == 0);
  return text;
}

// A control of check_exact_with_controls: a broken kernel, and where it must be caught (token count,
// threads).
struct Control {
  std::string name;
  std::function<bool(std::int64_t, int)> caught_at;
};

// Kernel `name` against the oracle in every instruction-set variant and table choice, on 1 and 3 threads,
// moving each of `token_counts` tokens (by default 64 and 37, a 16-slot block cut): exact, and every
// control wrong where it must be caught. `staged` and `blocks_at_once` fix those per-CPU choices in every
// variant (test::ScopedIsa's defaults otherwise).
void check_exact_with_controls(const test::KernelLibrary& library, const enumerate::Enumerated& S, const enumerate::Enumerated& T,
                               const std::string& name, const std::vector<Control>& controls,
                               const std::vector<std::int64_t>& token_counts = {64, 37}, std::optional<bool> staged = std::nullopt,
                               std::optional<bool> blocks_at_once = std::nullopt) {
  for (const std::string& variant : test::isa_variants()) {
    test::ScopedIsa isa(variant, staged.value_or(variant != "baseline"), variant != "baseline", blocks_at_once.value_or(variant != "baseline"));
    for (std::size_t k = 0; k < 3; ++k) {
      for (int threads : {1, 3}) {
        for (std::int64_t n : token_counts) {
          INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables, " << threads << " threads, num_tokens " << n);
          test::KernelRun run = test::run_against_oracle(library.find(name), S, T, k, n, threads);
          CHECK(run.code == 0);
          CHECK(run.wrong_bytes == 0);
          CHECK(run.moved > 0);
          for (const Control& control : controls) {
            if (!control.caught_at(n, threads)) continue;
            INFO(control.name);
            test::KernelRun bad = test::run_against_oracle(library.find(control.name), S, T, k, n, threads);
            CHECK(bad.code == 0);
            CHECK(bad.wrong_bytes > 0);
          }
        }
      }
    }
  }
}

// A pair of shipped layouts on `small` with `params` changed (64 tokens), its proof, and emit options that
// force streaming stores (as a serving-size move takes), the kernel named `name`.
struct StreamingPair {
  enumerate::Enumerated source, target;
  prove::Proof proof;
  emit::EmitOptions options;
};
StreamingPair streaming_pair(const std::string& source, const std::string& target, const std::map<std::string, std::int64_t>& params,
                             const std::string& name) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["num_tokens"] = 64;
  for (const auto& [key, value] : params) cache.params[key] = value;
  StreamingPair p{enumerate::enumerate_layout(spec::load_layout(catalog.find_layout(source).string()), cache),
                  enumerate::enumerate_layout(spec::load_layout(catalog.find_layout(target).string()), cache), {}, {}};
  p.proof = prove::prove(p.source.layout, p.target.layout, cache);
  p.options.streaming_from_bytes = 0;
  p.options.name = name;
  return p;
}

// `good` and `broken` (kernels of `pair` in `library`) in every instruction-set variant with a per-CPU choice
// that the test::ScopedIsa `second_orders` flag sets (a second loop order, four-by-four runs, the block
// order: `choice` names it), under every table choice, with every block whole (64 tokens) and the last cut
// (37): `good` moves the oracle's bytes both ways, `broken` is caught exactly where the choice is taken.
void check_caught_where_taken(const test::KernelLibrary& library, const std::string& good, const std::string& broken, const StreamingPair& pair,
                              const std::string& choice) {
  for (const std::string& variant : test::isa_variants())
    for (const bool taken : {false, true}) {
      test::ScopedIsa isa(variant, variant != "baseline", taken);
      for (std::size_t k = 0; k < 3; ++k)
        for (const std::int64_t n : {std::int64_t{64}, std::int64_t{37}}) {
          INFO(variant << " variant, " << choice << " " << (taken ? "on" : "off") << ", " << enumerate::table_choice_name(k) << " tables, " << n << " tokens");
          const test::KernelRun run = test::run_against_oracle(library.find(good), pair.source, pair.target, k, n, k == 1 ? 3 : 1);
          CHECK(run.code == 0);
          CHECK(run.wrong_bytes == 0);
          CHECK(run.moved > 0);
          const test::KernelRun bad = test::run_against_oracle(library.find(broken), pair.source, pair.target, k, n, 1);
          CHECK(bad.code == 0);
          CHECK((bad.wrong_bytes > 0) == taken);
        }
    }
}

// A text edit that makes a broken kernel of a pair: its name, the text replaced and its replacement.
struct Edit {
  std::string name, from, to;
};

// `code` (the pair's kernel) and one broken kernel per edit against the oracle, each broken kernel caught
// at every token count and thread count check_exact_with_controls runs.
// `staged`: the staged choices (test::ScopedIsa) forced in every variant, where given.
void check_edits_caught_everywhere(const StreamingPair& pair, const std::string& code, const std::vector<Edit>& edits,
                                   std::optional<bool> staged = std::nullopt) {
  std::vector<std::string> sources{code};
  std::vector<Control> controls;
  for (const Edit& e : edits) {
    sources.push_back(broken_kernel(pair.proof, pair.options, e.name, e.from, e.to));
    controls.push_back({e.name, [](std::int64_t, int) { return true; }});
  }
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  check_exact_with_controls(library, pair.source, pair.target, pair.options.name, controls, {64, 37}, staged);
}

}  // namespace

TEST_CASE("every emitted CPU kernel of a shipped pair moves exactly the oracle's bytes", "[emit][kernels]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto layouts = spec::load_layouts(catalog);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  std::vector<enumerate::Enumerated> enumerated;
  for (const auto& l : layouts) enumerated.push_back(enumerate::enumerate_layout(l, small));
  prove::ProveOptions options;
  options.side_cache = std::make_shared<prove::SideCache>();

  struct Case {
    std::size_t s, t;
    std::string name;
    prove::Grade grade;
  };
  std::vector<Case> cases;
  std::vector<std::string> sources(4);
  // Pairs of proven-equal layouts often emit the same code: each distinct kernel is compiled once (compiling
  // was half this test's time) and run for every pair that emitted it, against that pair's own oracle.
  std::map<std::string, std::string> compiled_as;  // code key -> the name its kernel is compiled under
  const std::size_t sample = test::pair_sample();
  for (std::size_t s = 0; s < layouts.size(); ++s) {
    for (std::size_t t = 0; t < layouts.size(); ++t) {
      if (!certificate::in_sample_pair(s, t, sample)) continue;
      prove::Proof p = prove::prove(layouts[s], layouts[t], small, options);
      if (!emit::emittable(p.grade, true)) continue;
      emit::EmitOptions o;
      o.name = "kernel_" + std::to_string(s) + "_" + std::to_string(t);
      o.allow_not_exact = true;
      const std::string source = emit::emit_kernel(p, o);
      const auto [it, first] = compiled_as.emplace(emit::kernel_code_key(source, o.name), o.name);
      if (first) sources[(compiled_as.size() - 1) % sources.size()] += source;
      cases.push_back({s, t, it->second, p.grade});
    }
  }
  REQUIRE(cases.size() > 500 / sample);
  INFO(compiled_as.size() << " distinct kernels for " << cases.size() << " pairs");
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());

  std::size_t exact = 0, subset = 0, not_exact = 0;
  for (const Case& c : cases) {
    const auto& S = enumerated[c.s];
    const auto& T = enumerated[c.t];
    INFO(layouts[c.s]->name << " -> " << layouts[c.t]->name << " (" << prove::grade_name(c.grade) << ")");
    test::Kernel kernel = library.find(c.name);
    REQUIRE(kernel != nullptr);
    exact += prove::is_exact(c.grade);
    subset += c.grade == prove::Grade::Subset;
    not_exact += c.grade == prove::Grade::NotExact;
    for (const std::string& variant : test::isa_variants()) {
      test::ScopedIsa isa(variant);
      for (std::size_t k = 0; k < 3; ++k) {
        for (std::int64_t n : {small.params.at("num_tokens"), std::int64_t{37}, std::int64_t{0}}) {
          INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables, num_tokens " << n);
          test::KernelRun run = test::run_against_oracle(kernel, S, T, k, n, k == 1 ? 3 : 1);
          CHECK(run.code == 0);
          CHECK(run.wrong_bytes == 0);
          if (n > 0) CHECK(run.moved > 0);
        }
      }
    }
    // Bad input: a token count past the capacity, a table entry out of its range; nothing written.
    test::KernelRun too_many = test::run_against_oracle(kernel, S, T, 0, small.params.at("num_tokens") + 1, 1);
    CHECK(too_many.code == 1);
  }
  CHECK(exact > 400 / sample);
  CHECK(subset > 0);
  CHECK(not_exact > 0);
}

TEST_CASE("emitted kernels compile warning-free under clang at -O2 too, and a kernel with an unused variable does not (the control)", "[emit][kernels]") {
  // The kernel tests compile with the system compiler at -O0; a user may build a kernel with clang and
  // -Werror. Clang reports a static function that no instantiated code calls (-Wunneeded-internal-declaration):
  // the AVX-512 gathered-row transpose in a kernel without gathered rows was one. Pairs with the legacy
  // cache's straight boxes, gathered rows, llama.cpp's 32 x 32 blocks and head-major pack lines.
  REQUIRE(std::system("command -v clang++ >/dev/null 2>&1") == 0);  // scripts/setup.sh installs clang
  const StreamingPair pairs[] = {streaming_pair("vllm-paged-legacy", "vllm-flash-hnd", {{"head_size", 128}}, "clang_head_lines"),
                                 streaming_pair("vllm-paged-legacy", "sglang-mha", {{"head_size", 128}}, "clang_rows"),
                                 streaming_pair("vllm-flash-nhd", "llamacpp-vtrans", {}, "clang_rows32")};
  std::vector<std::string> sources;
  for (const StreamingPair& pair : pairs) sources.push_back(emit::emit_kernel(pair.proof, pair.options));
  const native::CompileOptions clang{"clang++", {"-O2"}, 2, true};
  test::TempDir dir;
  CHECK_NOTHROW(native::KernelLibrary(sources, dir.path().string(), clang));
  std::string broken = sources.front();
  const std::string entry = "extern \"C\" int clang_head_lines(";
  const std::size_t at = broken.rfind(entry);  // the definition, after the header comment's copy
  REQUIRE(at != std::string::npos);
  broken.insert(broken.find('{', at) + 1, " int kv_unused_here = 0;");
  test::TempDir broken_dir;
  CHECK_THROWS_AS(native::KernelLibrary({broken}, broken_dir.path().string(), clang), native::CompileError);
}

TEST_CASE("each line's streaming stores are issued together at -O2, and with kv_line_stored emptied GCC interleaves two lines (the control)",
          "[emit][kernels]") {
  // FlashInfer's HND pages into SGLang's layer-first pool: 256-byte runs (kv_stream_copy<256>) in a box
  // read in four quarters, where GCC, left free, stored the 128-byte step's halves as k + 32, k + 64, k,
  // k + 96 (kv_line_stored's note). Should the control stop failing, the compiler no longer reorders the
  // stores and the barrier's reason is gone.
  const StreamingPair pair = streaming_pair("flashinfer-hnd", "sglang-host-layer-first", {{"head_size", 128}}, "line_order");
  const std::string source = emit::emit_kernel(pair.proof, pair.options);
  std::string unordered = source;
  const std::string barrier = "__asm__ volatile(\"\" ::: \"memory\");";
  for (std::size_t at = unordered.find(barrier); at != std::string::npos; at = unordered.find(barrier, at)) unordered.erase(at, barrier.size());
  REQUIRE(unordered != source);
  auto out_of_order = [&](const std::string& code) {
    test::TempDir dir;
    native::CompileOptions serving;  // -O2, as the sweep and a serving build compile
    serving.keep_assembly = true;
    native::KernelLibrary library({code}, dir.path().string(), serving);
    std::ifstream in(dir.path() / "kernels0.s");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto groups = native::streaming_store_groups(text);
    REQUIRE(std::count_if(groups.begin(), groups.end(), [](const native::StreamingStoreGroup& g) { return g.widths.front() == 32; }) >= 4);  // the AVX2 copies were found
    return std::count_if(groups.begin(), groups.end(), native::splits_lines);
  };
  CHECK(out_of_order(source) == 0);
  CHECK(out_of_order(unordered) > 0);
}

TEST_CASE("one kernel's code under two names has one code key, two pairs' kernels have two", "[emit][kernels]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  auto layout = [&](const char* name) { return spec::load_layout(catalog.find_layout(name).string()); };
  auto kernel = [&](const char* from, const char* to, const std::string& name) {
    emit::EmitOptions o;
    o.name = name;
    return emit::emit_kernel(prove::prove(layout(from), layout(to), small), o);
  };
  const std::string a = kernel("vllm-flash-nhd", "vllm-flash-hnd", "kernel_1_2");
  const std::string b = kernel("vllm-flash-nhd", "vllm-flash-hnd", "kernel_1_23");  // a name the first is a prefix of
  REQUIRE(a != b);
  CHECK(emit::kernel_code_key(a, "kernel_1_2") == emit::kernel_code_key(b, "kernel_1_23"));
  // The control: another pair's kernel (another target) is other code.
  const std::string c = kernel("vllm-flash-nhd", "sglang-mha", "kernel_1_2");
  CHECK(emit::kernel_code_key(c, "kernel_1_2") != emit::kernel_code_key(a, "kernel_1_2"));
  // The name is gone from the key, the code is not.
  CHECK(emit::kernel_code_key(a, "kernel_1_2").find("kernel_1_2") == std::string::npos);
  CHECK(emit::kernel_code_key(a, "kernel_1_2").find("extern \"C\" int ") != std::string::npos);
  // The digest (the sweep's --against) follows the code, not its comments or blank lines.
  CHECK(emit::kernel_code_digest(a, "kernel_1_2") == emit::kernel_code_digest(b, "kernel_1_23"));
  REQUIRE(a.rfind("\nextern \"C\" int ") != std::string::npos);  // the definition, after the header comment's copy
  std::string recommented = a;
  recommented.insert(recommented.rfind("\nextern \"C\" int ") + 1, "// a comment the generator's prose changed\n\n    // and another\n");
  CHECK(emit::kernel_code_digest(recommented, "kernel_1_2") == emit::kernel_code_digest(a, "kernel_1_2"));
  CHECK(emit::kernel_code_digest(c, "kernel_1_2") != emit::kernel_code_digest(a, "kernel_1_2"));  // the control
  std::string recoded = a;
  recoded.insert(recoded.rfind("\nextern \"C\" int ") + 1, "static int kv_one_more_line = 0;\n");
  CHECK(emit::kernel_code_digest(recoded, "kernel_1_2") != emit::kernel_code_digest(a, "kernel_1_2"));
  // A per-CPU choice the kernel does not read, added to the table, leaves its digest as it was (each digest
  // taken with the table its kernel was emitted with); a choice it reads with its values changed does not
  // (the control).
  auto with_choices = [&](const std::vector<emit::CpuChoice>& table) {
    std::string text = a;
    const std::string declarations = emit::cpu_choice_declarations();
    const std::size_t at = text.find(declarations);
    REQUIRE(at != std::string::npos);
    text.replace(at, declarations.size(), emit::cpu_choice_declarations(table));
    return text;
  };
  std::vector<emit::CpuChoice> more = emit::cpu_choices();
  more.push_back({.flag = "unread_choice", .variable = "KVLAYOUT_UNREAD", .amd_avx2 = true, .amd_avx512 = true, .elsewhere = true,
                  .test_switch = emit::ChoiceTestSwitch::prefetches, .read_by = "nothing", .why = "A control."});
  std::string added = with_choices(more);
  added.insert(added.find("kv_avx512.store("), "kv_unread_choice.store(kv_unread_choice_wanted(), std::memory_order_relaxed);\n  ");
  CHECK(emit::kernel_code_digest(added, "kernel_1_2", more) == emit::kernel_code_digest(a, "kernel_1_2"));
  std::vector<emit::CpuChoice> flipped = emit::cpu_choices();
  REQUIRE(a.find("kv_" + std::string(flipped.front().flag) + ".load(") != std::string::npos);  // every kernel's run prefetch reads it
  flipped.front().elsewhere = !flipped.front().elsewhere;
  CHECK(emit::kernel_code_digest(with_choices(flipped), "kernel_1_2", flipped) != emit::kernel_code_digest(a, "kernel_1_2"));
}

TEST_CASE("streaming stores, whole-line transposes and blocks read in the source's order move exactly the oracle's bytes", "[emit][kernels]") {
  // On `small` (16-element heads, 67 tokens) no kernel streams and no run is a whole line. Here heads of 32
  // bf16 elements make 64-byte runs, and a streaming threshold of 0 bytes takes the paths a serving-size
  // move takes, on layouts chosen to reach each of them.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 32;
  cache.params["num_tokens"] = 64;
  std::vector<std::shared_ptr<const spec::Layout>> layouts;
  std::vector<enumerate::Enumerated> enumerated;
  for (const char* name : {"vllm-flash-nhd", "vllm-flash-hnd", "vllm-flashinfer-hnd", "vllm-packed-nhd", "vllm-paged-legacy",
                           "sglang-mha", "sglang-host-page-head", "trtllm-pool", "hf-dynamic", "lmcache-2ltd", "flashinfer-hnd",
                           "llamacpp", "llamacpp-vtrans"}) {
    layouts.push_back(spec::load_layout(catalog.find_layout(name).string()));
  }
  // The legacy cache with 32-slot blocks: its value rows are 64-byte lines of tokens, so a move into it
  // transposes whole lines along the token, the coordinate a partial move stops inside. With 8-slot blocks
  // a move out of it transposes in 8-row bands (16-row bands otherwise).
  test::TempDir specs;
  for (int slots : {32, 8}) {
    std::ifstream in(catalog.find_layout("vllm-paged-legacy"));
    auto declaration = nlohmann::json::parse(in);
    const std::string name = "vllm-paged-legacy-" + std::to_string(slots);
    declaration["name"] = name;
    declaration["params"]["block_size"] = slots;
    std::ofstream(specs.path() / (name + ".json")) << declaration.dump(2);
    layouts.push_back(spec::load_layout((specs.path() / (name + ".json")).string()));
  }
  for (const auto& l : layouts) enumerated.push_back(enumerate::enumerate_layout(l, cache));
  struct Case {
    std::size_t s, t;
    std::string name;
  };
  std::vector<Case> cases;
  std::vector<std::string> sources(2);
  std::size_t source_ordered = 0, streamed = 0, line_transposes = 0, line_transposes8 = 0, staged = 0, gathered = 0, inverted = 0,
              columns16 = 0, run_pairs = 0, staged_runs = 0, interleaved = 0, sparse_target_rows = 0;
  for (std::size_t s = 0; s < layouts.size(); ++s) {
    for (std::size_t t = 0; t < layouts.size(); ++t) {
      prove::Proof p = prove::prove(layouts[s], layouts[t], cache);
      if (!emit::emittable(p.grade, false)) continue;
      emit::EmitOptions o;
      o.name = "streaming_" + std::to_string(s) + "_" + std::to_string(t);
      o.streaming_from_bytes = 0;
      std::string source = emit::emit_kernel(p, o);
      for (const auto& cell : emit::make_plan(*p.source_bound, *p.target_bound).cells) source_ordered += cell.source_order_from >= 0;
      streamed += source.find("if (stream) kv_stream_copy<") != std::string::npos;
      line_transposes += source.find("kv_transpose_lines(kv_rows_apart{pT") != std::string::npos || source.find("kv_transpose_lines16(kv_rows_apart{pT") != std::string::npos;
      line_transposes8 += source.find("kv_transpose_lines(kv_rows_apart{pT") != std::string::npos;
      staged += source.find("kv_stream_copy<") != std::string::npos && source.find("kv_stage") != std::string::npos;
      columns16 += source.find("kv_transpose_columns16(pT") != std::string::npos;
      run_pairs += source.find("kv_run_pairs16(pT") != std::string::npos || source.find("kv_run_quads16(pT") != std::string::npos;
      staged_runs += source.find("kv_quarter_at") != std::string::npos;
      interleaved += source.find("for (int64_t sub = 0; sub < kv_passes; ++sub)") != std::string::npos;
      sparse_target_rows += source.find("kv_from_rows.resize(") != std::string::npos;
      gathered += source.find("kv_transpose_rows_block<2>(kv_to") != std::string::npos;
      inverted += source.find("std::vector<int32_t> kv_inverse0") != std::string::npos;
      sources[cases.size() % sources.size()] += source;
      cases.push_back({s, t, o.name});
    }
  }
  // 121 pairs when this was written: 18 source-ordered cells, 9 whole-line transposes, every kernel streaming.
  CHECK(source_ordered >= 10);
  CHECK(streamed >= 100);
  CHECK(line_transposes >= 4);
  CHECK(line_transposes8 >= 1);  // the 8-slot legacy cache: 8-row bands, not 16
  CHECK(staged >= 2);            // transposed boxes staged on the stack, then streamed out whole
  // Into the 16-slot legacy value cache (32-byte token rows, two to a line): 16 x 32 boxes of whole lines,
  // and 8 x 8 tiles for the block 37 tokens cut (9 sources when this was written).
  CHECK(columns16 >= 6);
  // The legacy key cache's 16-byte x-packs, moved in or out: runs in 2 x 2 or 4 x 4 transposes where the
  // block is whole, run by run in the block 37 tokens cut (18 pairs of the 13 shipped layouts when written).
  CHECK(run_pairs >= 12);
  // Out of the legacy key cache into token-major blocks, a whole block's packs are staged on the stack in the
  // source's order and streamed out (emit/staged_runs.hpp); the block 37 tokens cut goes run by run.
  CHECK(staged_runs >= 3);
  // Nests that read the same source pages run in interleaved passes (vllm-packed-nhd's K and V per head
  // into the legacy caches and llamacpp-vtrans), each pass a share of every thread's part (3 threads here).
  CHECK(interleaved >= 3);
  // Sparse gathered target rows (llamacpp-vtrans's V into vllm-packed-nhd, K and V interleaved per head):
  // the target rows outer, each written whole before the next.
  CHECK(sparse_target_rows >= 1);
  // Gathered-row tiles (legacy V <-> SGLang's token pool, llama.cpp's transposed V), with 64 slots here:
  // whole 32 x 32 blocks of streamed lines when every token is moved, 8 x 8 and row by row when 37 are.
  CHECK(gathered >= 20);
  CHECK(inverted >= 20);  // llama.cpp's transposed V over its inverted cell table, both directions
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  for (const Case& c : cases) {
    INFO(layouts[c.s]->name << " -> " << layouts[c.t]->name);
    test::Kernel kernel = library.find(c.name);
    REQUIRE(kernel != nullptr);
    for (const std::string& variant : test::isa_variants()) {
      test::ScopedIsa isa(variant);
      for (std::size_t k = 0; k < 3; ++k) {
        for (std::int64_t n : {cache.params.at("num_tokens"), std::int64_t{37}}) {
          INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables, num_tokens " << n);
          test::KernelRun run = test::run_against_oracle(kernel, enumerated[c.s], enumerated[c.t], k, n, k == 1 ? 3 : 1);
          CHECK(run.code == 0);
          CHECK(run.wrong_bytes == 0);
          CHECK(run.moved > 0);
        }
      }
    }
  }
}

TEST_CASE("nests interleaved in block passes move exactly the oracle's bytes, with the passes and without", "[emit][kernels]") {
  // vLLM 0.3.3's LHBNC cache holds a (layer, head)'s blocks of 16 token rows, each K then V: into the legacy
  // cache (K packs beside V tiles) or llama.cpp's transposed V (K runs beside V's gathered-row tile) the nests
  // run in interleaved passes, and where one flattened iteration reads more than 64 KiB (here 128 blocks of
  // 2 KiB) each pass is split again, a block at a time (cpu.cpp's block_pass_count; kv_block_passes). The
  // tile nest into llama.cpp has no loop inside its flattened ones: it moves whole in the first block pass.
  // LBNHC's rows hold every head's K and V, so its head loop's passes interleave in the source: split too.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 32;
  cache.params["num_kv_heads"] = 2;
  cache.params["num_tokens"] = 2048;
  auto layout = [&](const char* name) { return spec::load_layout(catalog.find_layout(name).string()); };
  struct Case {
    std::string name, passes;
    enumerate::Enumerated from, to;
  };
  std::vector<Case> cases;
  std::vector<std::string> sources(1);
  for (const auto& [from, to, passes] : {std::tuple{"vllm033-lhbnc", "vllm-paged-legacy", "INT64_C(128)"}, std::tuple{"vllm033-lhbnc", "llamacpp-vtrans", "INT64_C(128)"},
                                         std::tuple{"vllm033-lbnhc", "vllm-paged-legacy", "INT64_C(2)"}}) {
    const prove::Proof p = prove::prove(layout(from), layout(to), cache);
    REQUIRE(emit::emittable(p.grade, false));
    emit::EmitOptions o;
    o.name = "block_passes_" + std::to_string(cases.size());
    o.streaming_from_bytes = 0;
    const std::string code = emit::emit_kernel(p, o);
    INFO(from << " -> " << to);
    REQUIRE_THAT(code, Catch::Contains(std::string("kv_block_passes.load(std::memory_order_relaxed) ? ") + passes + " : INT64_C(1)"));
    if (std::string(to) == "llamacpp-vtrans") CHECK_THAT(code, Catch::Contains("if (inner != 0) continue;  // moved whole in the first block pass"));
    sources[0] += code;
    cases.push_back({o.name, passes, enumerate::enumerate_layout(layout(from), cache), enumerate::enumerate_layout(layout(to), cache)});
  }
  // The control: LBHNC's block holds a head's rows in one span (its head loop steps past what an iteration
  // reads), and its flattened iteration reads 8 KiB here: no block passes.
  const prove::Proof control = prove::prove(layout("vllm033-lbhnc"), layout("vllm-paged-legacy"), cache);
  emit::EmitOptions o;
  o.streaming_from_bytes = 0;
  const std::string control_code = emit::emit_kernel(control, o);
  REQUIRE_THAT(control_code, Catch::Contains("for (int64_t sub = 0; sub < kv_passes; ++sub)"));
  CHECK_THAT(control_code, !Catch::Contains("kv_block_passes.load"));
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  for (const Case& c : cases) {
    const std::string& name = c.name;
    test::Kernel kernel = library.find(name);
    REQUIRE(kernel != nullptr);
    for (const std::string& variant : test::isa_variants())
      for (const bool block_passes : {false, true}) {
        test::ScopedIsa isa(variant, variant != "baseline", block_passes);  // second_orders: KVLAYOUT_BLOCK_PASSES too
        REQUIRE(std::string(std::getenv("KVLAYOUT_BLOCK_PASSES")) == (block_passes ? "on" : "off"));
        for (std::size_t k = 0; k < 3; ++k)
          for (std::int64_t n : {std::int64_t{2048}, std::int64_t{1000}, std::int64_t{37}}) {
            INFO(name << ", " << variant << " variant, block passes " << block_passes << ", " << enumerate::table_choice_name(k) << " tables, num_tokens " << n);
            test::KernelRun run = test::run_against_oracle(kernel, c.from, c.to, k, n, k == 1 ? 3 : 1);
            CHECK(run.code == 0);
            CHECK(run.wrong_bytes == 0);
            CHECK(run.moved > 0);
          }
      }
  }
}

TEST_CASE("16-byte runs move four by four out of a packed source where both loops divide by 4, else two by two or as the CPU picks, exactly as the oracle", "[emit][kernels]") {
  // The legacy key cache's x-packs (emit/run_pairs.hpp's run_group_side): with 16-slot blocks and 32-element
  // heads both the slot and the pack index divide by 4, and moves out of the cache take 4 x 4 transposes, as
  // do moves into it from vllm-flash-hnd (whose slot rows are one head's, so the source holds the packs'
  // span together), those in source order (pairs_in_source_order: the slot loop outside the pack loop);
  // moves into it from the other two take 2 x 2, and 4 x 4 where the call's CPU picks it (both nests
  // printed: quads_where_cpu_picks, KVLAYOUT_RUN_QUADS), and each variant runs both; with 2-slot blocks the
  // slot does not divide by 4, and every nest must take 2 x 2 transposes (the control: a 4 x 4 one there
  // would move slots past the block).
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const spec::CacheShape cache = legacy_pack_cache(catalog);
  test::TempDir specs;
  std::vector<std::string> sources(1);
  struct Case {
    std::string name;
    enumerate::Enumerated from, to;
    bool quads, pairs;  // kv_run_quads16 / kv_run_pairs16 printed
  };
  std::vector<Case> cases;
  for (int slots : {16, 2}) {
    const auto legacy = legacy_with_blocks(catalog, specs, slots);
    for (const char* other : {"sglang-host-page-head", "vllm-flash-nhd", "vllm-flash-hnd"}) {
      const auto o = spec::load_layout(catalog.find_layout(other).string());
      for (bool out_of_legacy : {true, false}) {
        const auto& from = out_of_legacy ? legacy : o;
        const auto& to = out_of_legacy ? o : legacy;
        emit::EmitOptions e;
        e.name = "runs_" + std::to_string(slots) + "_" + std::to_string(cases.size());
        e.streaming_from_bytes = 0;
        const std::string source = emit::emit_kernel(prove::prove(from, to, cache), e);
        INFO(from->name << " -> " << to->name);
        const bool quads = source.find("kv_run_quads16(pT") != std::string::npos, pairs = source.find("kv_run_pairs16(pT") != std::string::npos;
        const bool head_rows = std::string(other) == "vllm-flash-hnd";
        CHECK(quads == (slots == 16));
        CHECK(pairs == (slots == 2 || (!out_of_legacy && !head_rows)));
        CHECK((source.find("if (kv_run_quads.load(std::memory_order_relaxed))") != std::string::npos) == (quads && pairs));
        if (quads && !pairs && !out_of_legacy) {  // the slot's loop outside the pack's
          const std::size_t slot_loop = source.find("for (int64_t token_mod16 = 0, token_mod16_end = INT64_C(16); token_mod16 < token_mod16_end; token_mod16 += 4)");
          const std::size_t pack_loop = source.find("KV_UNROLL for (int64_t dim_div8 = 0");
          CHECK(slot_loop != std::string::npos);
          CHECK(pack_loop != std::string::npos);
          CHECK(slot_loop < pack_loop);
        }
        cases.push_back({e.name, enumerate::enumerate_layout(from, cache), enumerate::enumerate_layout(to, cache), quads, pairs});
        sources[0] += source;
      }
    }
  }
  CHECK(std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.quads && !c.pairs; }) == 4);
  CHECK(std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.quads && c.pairs; }) == 2);
  CHECK(std::count_if(cases.begin(), cases.end(), [](const Case& c) { return !c.quads && c.pairs; }) == 6);
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  for (const Case& c : cases) {
    INFO(c.from.layout->name << " -> " << c.to.layout->name);
    test::Kernel kernel = library.find(c.name);
    REQUIRE(kernel != nullptr);
    for (const std::string& variant : test::isa_variants())
      for (const bool run_quads : {false, true}) {
        test::ScopedIsa isa(variant, variant != "baseline", run_quads);
        for (std::size_t k = 0; k < 3; ++k)
          for (std::int64_t n : {std::int64_t{48}, std::int64_t{37}}) {
            INFO(variant << " variant, four by four where the CPU picks " << (run_quads ? "on" : "off") << ", " << enumerate::table_choice_name(k)
                         << " tables, num_tokens " << n);
            test::KernelRun run = test::run_against_oracle(kernel, c.from, c.to, k, n, 1);
            CHECK(run.code == 0);
            CHECK(run.wrong_bytes == 0);
            CHECK(run.moved > 0);
          }
      }
  }
}

TEST_CASE("the four-by-four nest where the CPU picks it moves the oracle's bytes, and a broken one is caught exactly where it is taken", "[emit][kernels]") {
  // vLLM 0.33's packed head-major pages (a head's K then V per slot, 512-byte slot rows at 128 dims) into
  // the legacy key cache: the source does not hold a slot's packs as the whole span the innermost loop
  // steps over, so the pairs go two by two, and four by four where the call's CPU picks it
  // (quads_where_cpu_picks, KVLAYOUT_RUN_QUADS; on Intel by default). Both nests move the oracle's bytes,
  // with whole blocks and a cut one (37 tokens). Control: the four-by-four nest copying nothing, caught
  // exactly where it is taken (ScopedIsa's third choice on), on every variant.
  test::TempDir dir;
  const StreamingPair pair = streaming_pair("vllm033-lhbnc", "vllm-paged-legacy", {{"num_layers", 2}, {"num_kv_heads", 2}, {"head_size", 32}}, "quads");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  REQUIRE(code.find("if (kv_run_quads.load(std::memory_order_relaxed))") != std::string::npos);
  REQUIRE(code.find("kv_run_pairs16(pT") != std::string::npos);
  emit::EmitOptions skips = pair.options;
  skips.name = "quads_skip";
  std::string broken = emit::emit_kernel(pair.proof, skips);
  std::size_t skipped = 0;
  for (std::size_t at = broken.find("kv_run_quads16(pT"); at != std::string::npos; at = broken.find("kv_run_quads16(pT", at + 20), ++skipped)
    broken.insert(at, "if (false) ");
  REQUIRE(skipped == 2);  // both instruction-set variants
  test::KernelLibrary library({code, broken}, dir.path().string());
  check_caught_where_taken(library, "quads", "quads_skip", pair, "four by four");
}

TEST_CASE("a fenced copy holds its span's bytes, and reading or writing the byte past its fenced end faults", "[emit][kernels]") {
  // The fixture's fence (Fenced, used for every kernel test's tables, source and target buffers) as its own
  // control. Fenced at its end, a span whose size is a multiple of the alignment ends right at the
  // unreadable page; one that is not leaves the rounding's bytes readable, and the fence begins past them.
  // Fenced at its start, the byte before the first is the fence's last.
  for (const test::FenceAt at : {test::FenceAt::end, test::FenceAt::start}) {
    for (const std::size_t bytes : {std::size_t{4096}, std::size_t{200}, std::size_t{12}}) {
      std::vector<char> data(bytes);
      for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(i * 7 + 1);
      const std::size_t align = bytes == 12 ? 4 : 64;
      const test::Fenced fenced({{data.data(), bytes}}, align, at);
      char* copy = static_cast<char*>(fenced.pointers().at(0));
      INFO(bytes << " bytes, fenced at its " << (at == test::FenceAt::end ? "end" : "start"));
      CHECK(std::memcmp(copy, data.data(), bytes) == 0);
      CHECK(reinterpret_cast<std::uintptr_t>(copy) % align == 0);
      // The first byte outside the span's readable bytes, on the fenced side.
      char* const outside = at == test::FenceAt::end ? copy + (bytes + align - 1) / align * align : copy - 1;
      // Inside, every byte is writable (a fenced target is written there).
      copy[0] = copy[bytes - 1] = 'k';
      const int read_status = status_in_child([&] { (void)*static_cast<volatile const char*>(outside); });
      CHECK((WIFSIGNALED(read_status) && WTERMSIG(read_status) == SIGSEGV));
      const int write_status = status_in_child([&] { *static_cast<volatile char*>(outside) = 'k'; });
      CHECK((WIFSIGNALED(write_status) && WTERMSIG(write_status) == SIGSEGV));
    }
  }
}

TEST_CASE("a kernel writing one line past its target's end, or one line before its start, dies on the fence", "[emit][kernels]") {
  // The fixture fences every unshifted target buffer (run_against_oracle): the controls are a kernel that
  // writes the whole of LMCache's contiguous buffer (67 tokens, every byte of it) with its target pointer
  // moved one line on, or one line back. The byte oracle would see both as wrong bytes; the fence must see
  // the first write outside the buffer, before the oracle compares anything.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  const auto source = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  const auto target = spec::load_layout(catalog.find_layout("lmcache-2ltd").string());
  const prove::Proof p = prove::prove(source, target, small);
  REQUIRE(emit::emittable(p.grade, false));
  emit::EmitOptions o;
  o.name = "whole";
  const std::string target_pointer = "char* const pT = static_cast<char*>(T[INT64_C(0)]);";
  const std::string past = broken_kernel(p, o, "one_line_past", target_pointer, "char* const pT = static_cast<char*>(T[INT64_C(0)]) + 64;");
  const std::string before = broken_kernel(p, o, "one_line_before", target_pointer, "char* const pT = static_cast<char*>(T[INT64_C(0)]) - 64;");
  test::TempDir dir;
  test::KernelLibrary library({emit::emit_kernel(p, o), past, before}, dir.path().string());
  const auto S = enumerate::enumerate_layout(source, small), T = enumerate::enumerate_layout(target, small);
  for (const std::string& variant : test::isa_variants()) {
    test::ScopedIsa isa(variant);
    for (const test::FenceAt at : {test::FenceAt::end, test::FenceAt::start}) {
      INFO(variant << " variant, fenced at the " << (at == test::FenceAt::end ? "end" : "start"));
      const test::KernelRun run = test::run_against_oracle(library.find("whole"), S, T, 0, 67, 1, test::Placement::fenced_at(at));
      CHECK(run.code == 0);
      CHECK(run.wrong_bytes == 0);
      CHECK(run.moved == 2 * 2 * 67 * 4 * 16);  // every element of the target: its last byte is written
      const char* control = at == test::FenceAt::end ? "one_line_past" : "one_line_before";
      const int status = status_in_child([&] { test::run_against_oracle(library.find(control), S, T, 0, 67, 1, test::Placement::fenced_at(at)); });
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV));
    }
  }
}

TEST_CASE("a kernel reads no block table entry past the table's end where a page of 64 slots ends past the cache's last 16-slot block, and one that does dies on the fence", "[emit][kernels]") {
  // Out of vLLM's legacy cache (16-slot blocks) into SGLang's page_head host pool (64-slot pages), 48
  // tokens: the nest walks a page's four blocks, and the fourth lies past the cache, past the 3-entry block
  // table. Each step reads its block's entry before the token guard below it, so the step whose first
  // token is already past the last is skipped first (statements.cpp, least_value), and the next
  // step's entry is prefetched only where that step moves something. The fixture fences every table
  // (FencedTables) and source buffer: the control, the same kernel without those guards, reads entry 3 and
  // dies of SIGSEGV on a table fenced at its end.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const spec::CacheShape cache = legacy_pack_cache(catalog);
  test::TempDir specs;
  const auto legacy = legacy_with_blocks(catalog, specs, 16);
  const auto host = spec::load_layout(catalog.find_layout("sglang-host-page-head").string());
  const prove::Proof p = prove::prove(legacy, host, cache);
  REQUIRE(emit::emittable(p.grade, false));
  emit::EmitOptions o;
  o.name = "fenced";
  o.streaming_from_bytes = 0;
  const std::string code = emit::emit_kernel(p, o);
  const std::string guard = "if (token_div64 * INT64_C(64) + token_div16_mod4 * INT64_C(16) > kv_min(INT64_C(47), n - 1)) continue;";
  const std::string ahead = " && token_div64 * INT64_C(64) + (token_div16_mod4 + 1) * INT64_C(16) <= kv_min(INT64_C(47), n - 1)";
  REQUIRE(code.find(guard) != std::string::npos);
  REQUIRE(code.find(ahead) != std::string::npos);
  std::string unguarded = broken_kernel(p, o, "fenced_unguarded", guard, "");
  for (std::size_t at = unguarded.find(ahead); at != std::string::npos; at = unguarded.find(ahead, at)) unguarded.erase(at, ahead.size());
  test::TempDir dir;
  test::KernelLibrary library({code, unguarded}, dir.path().string());
  const auto S = enumerate::enumerate_layout(legacy, cache), T = enumerate::enumerate_layout(host, cache);
  for (const std::string& variant : test::isa_variants()) {
    test::ScopedIsa isa(variant);
    for (std::size_t k = 0; k < 3; ++k) {
      INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables");
      test::KernelRun run = test::run_against_oracle(library.find("fenced"), S, T, k, 48, k == 1 ? 2 : 1);
      CHECK(run.code == 0);
      CHECK(run.wrong_bytes == 0);
      CHECK(run.moved > 0);
      // The control, in a child process: it must die on the fence, not return.
      const int status = status_in_child([&] { test::run_against_oracle(library.find("fenced_unguarded"), S, T, k, 48, 1, test::Placement::fenced_at(test::FenceAt::end)); });
      CHECK(WIFSIGNALED(status));
      CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV));
    }
  }
}

TEST_CASE("an emitted kernel refuses a table entry outside its range and a null pointer, writing nothing", "[emit][kernels]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  auto S = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout("vllm-flash-nhd").string()), small);
  auto T = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout("vllm-flash-hnd").string()), small);
  emit::EmitOptions o;
  o.name = "checked_kernel";
  std::string source = emit::emit_kernel(prove::prove(S.layout, T.layout, small), o);
  test::TempDir dir;
  test::KernelLibrary library({source}, dir.path().string());
  test::Kernel kernel = library.find("checked_kernel");
  REQUIRE(kernel);

  enumerate::Storage src(*S.bound, S.maps[0]), dst(*T.bound, T.maps[0]);
  const auto poison = enumerate::patterns_for(T.layout->dtype).poison;
  dst.fill(poison);
  auto st = test::int32_tables(S, 0), dt = test::int32_tables(T, 0);
  dt[0][2] = 5;  // one past the range [0, 5)
  std::vector<const std::int32_t*> stp{st[0].data()}, dtp{dt[0].data()};
  std::vector<void*> sp = src.bases(), dp = dst.bases();
  CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), 67, 2) == 2);
  CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), 32, 2) == 0);  // entry 2 is first read by token 32
  dst.fill(poison);
  CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), 33, 2) == 2);
  for (std::int64_t e = 0; e < dst.elements(); ++e) REQUIRE(dst.get(e) == poison);
  CHECK(kernel(sp.data(), nullptr, stp.data(), dtp.data(), 10, 1) == 3);
  CHECK(kernel(sp.data(), dp.data(), nullptr, dtp.data(), 10, 1) == 3);
  CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), -1, 1) == 1);
}

TEST_CASE("an emitted kernel refuses two table entries that hold one block, writing nothing", "[emit][kernels]") {
  // Both entries lie inside the table's range, so only the distinctness check can catch it: without it the
  // kernel would move two blocks of tokens onto one (a wrong move that no bounds check sees).
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  auto S = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout("vllm-flash-nhd").string()), small);
  auto T = enumerate::enumerate_layout(spec::load_layout(catalog.find_layout("vllm-flash-hnd").string()), small);
  emit::EmitOptions o;
  o.name = "distinct_kernel";
  std::string source = emit::emit_kernel(prove::prove(S.layout, T.layout, small), o);
  CHECK_THAT(source, Catch::Contains("5 two entries of one table hold the same block"));
  test::TempDir dir;
  test::KernelLibrary library({source}, dir.path().string());
  test::Kernel kernel = library.find("distinct_kernel");
  REQUIRE(kernel);

  enumerate::Storage src(*S.bound, S.maps[0]), dst(*T.bound, T.maps[0]);
  const auto poison = enumerate::patterns_for(T.layout->dtype).poison;
  auto st = test::int32_tables(S, 0), dt = test::int32_tables(T, 0);
  std::vector<void*> sp = src.bases(), dp = dst.bases();
  for (bool on_source : {true, false}) {
    INFO((on_source ? "source" : "destination") << " table repeats a block");
    auto st2 = st, dt2 = dt;
    auto& table = on_source ? st2[0] : dt2[0];
    table[3] = table[1];  // entries 1 and 3 (tokens 16.. and 48..) hold one block
    std::vector<const std::int32_t*> stp{st2[0].data()}, dtp{dt2[0].data()};
    dst.fill(poison);
    CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), 67, 2) == 5);
    for (std::int64_t e = 0; e < dst.elements(); ++e) REQUIRE(dst.get(e) == poison);
    // Tokens below 48 read entries 0..2 only: those hold distinct blocks, and the move runs.
    CHECK(kernel(sp.data(), dp.data(), stp.data(), dtp.data(), 48, 1) == 0);
  }
}

TEST_CASE("the kernel generator refuses a proof that does not license the move, whatever calls it", "[emit]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto small = spec::load_cache(catalog.find_cache("small").string());
  auto nhd = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  auto collide = spec::load_layout(catalog.find_layout("broken-collide").string());
  emit::EmitOptions o;
  // A refused pair whose grade a caller overwrote: the obligations still say REFUSED.
  prove::Proof refused = prove::prove(nhd, collide, small);
  REQUIRE(refused.grade == prove::Grade::Refused);
  CHECK_THROWS_AS(emit::emit_kernel(refused, o), emit::NotEmittable);
  refused.grade = prove::Grade::ExactByte;
  CHECK_THROWS_WITH(emit::emit_kernel(refused, o), Catch::Contains("not what its obligations give"));
  // An exact pair proven with injectivity switched off (a test-only switch): the move relies on it.
  prove::ProveOptions unchecked;
  unchecked.disabled.insert("injective");
  prove::Proof partial = prove::prove(nhd, nhd, small, unchecked);
  REQUIRE(prove::is_exact(partial.grade));
  CHECK_THROWS_WITH(emit::emit_kernel(partial, o), Catch::Contains("injective(source) is not proved"));
  // The same pair, fully proven, is emitted.
  CHECK_NOTHROW(emit::emit_kernel(prove::prove(nhd, nhd, small), o));
}

TEST_CASE("the kernel tests run the AVX2 variant: one broken in it alone is caught there and not in the baseline", "[emit][kernels]") {
  // Control for the variant loop above: the AVX2 copy's 32-byte loads replaced by zeros. Streaming paths
  // (threshold 0) on 32-element heads, where every run is at least 64 bytes.
  if (!cpu_has_avx2()) {
    WARN("this CPU has no AVX2: only the baseline variant runs here");
    return;
  }
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 32;
  cache.params["num_tokens"] = 64;
  auto source = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  auto target = spec::load_layout(catalog.find_layout("sglang-mha").string());
  prove::Proof p = prove::prove(source, target, cache);
  emit::EmitOptions o;
  o.name = "broken_avx2";
  o.streaming_from_bytes = 0;
  std::string code = emit::emit_kernel(p, o);
  const std::string load = "_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + k))";
  std::size_t replaced = 0;
  for (std::size_t at = code.find(load); at != std::string::npos; at = code.find(load, at)) {
    code.replace(at, load.size(), "_mm256_setzero_si256()");
    ++replaced;
  }
  REQUIRE(replaced >= 2);
  test::TempDir dir;
  test::KernelLibrary library({code}, dir.path().string());
  const auto S = enumerate::enumerate_layout(source, cache), T = enumerate::enumerate_layout(target, cache);
  {
    test::ScopedIsa isa("baseline");
    CHECK(test::run_against_oracle(library.find("broken_avx2"), S, T, 2, 64, 1).wrong_bytes == 0);
  }
  test::ScopedIsa isa("avx2");
  CHECK(test::run_against_oracle(library.find("broken_avx2"), S, T, 2, 64, 1).wrong_bytes > 0);
}

TEST_CASE("the kernel tests run the AVX-512 transposes: each broken there alone is caught under avx512 and in no other variant", "[emit][kernels]") {
  // Control for the "avx512" variant of the suite's loops, one per AVX-512 helper. Out of the legacy cache the
  // value box's 16-token lines (heads of 32 bf16, streaming forced) go through kv_transpose_lines16_avx512:
  // its two halves' permutes swapped, tokens 0..7 and 8..15 trade places. Into llama.cpp's transposed V the
  // whole 32 x 32 blocks (64 tokens: two blocks of cells) go through kv_transpose_rows32_avx512: its
  // unpacks' halves swapped, target rows trade places in pairs. The AVX2 variant alone (KVLAYOUT_ISA=avx2)
  // calls neither.
  struct Helper {
    const char *source, *target, *name, *call, *from, *to;
    std::map<std::string, std::int64_t> params;
  };
  const Helper helpers[] = {
      {"vllm-paged-legacy", "vllm-flash-nhd", "broken_lines16", "if (from_row == 32 && kv_avx512.load(std::memory_order_relaxed))",
       "_mm512_permutex2var_epi16(c[0][k], half == 0 ? first : last, c[1][k])", "_mm512_permutex2var_epi16(c[0][k], half == 0 ? last : first, c[1][k])",
       {{"head_size", 32}}},
      {"vllm-flash-nhd", "llamacpp-vtrans", "broken_rows32", "if (GROUPS == 4 && bs == 32 && kv_avx512.load(std::memory_order_relaxed))",
       "half == 0 ? _mm512_unpacklo_epi64(u[i], u[i + 4]) : _mm512_unpackhi_epi64(u[i], u[i + 4])",
       "half == 0 ? _mm512_unpackhi_epi64(u[i], u[i + 4]) : _mm512_unpacklo_epi64(u[i], u[i + 4])", {}},
  };
  const auto variants = test::isa_variants();
  const bool avx512 = std::find(variants.begin(), variants.end(), "avx512") != variants.end();
  if (!avx512) WARN("this CPU has no AVX-512 BW: the broken AVX-512 transposes are not run here");
  for (const Helper& h : helpers) {
    INFO(h.name);
    const StreamingPair pair = streaming_pair(h.source, h.target, h.params, h.name);
    std::string code = emit::emit_kernel(pair.proof, pair.options);
    const std::size_t at = code.find(h.from);
    REQUIRE(at != std::string::npos);
    REQUIRE(code.find(h.from, at + 1) == std::string::npos);  // one copy, outside both variants
    REQUIRE(code.find(h.call) != std::string::npos);
    code.replace(at, std::string(h.from).size(), h.to);
    test::TempDir dir;
    test::KernelLibrary library({code}, dir.path().string());
    for (const std::string& variant : variants) {
      INFO(variant << " variant");
      test::ScopedIsa isa(variant);
      const test::KernelRun run = test::run_against_oracle(library.find(h.name), pair.source, pair.target, 2, 64, 1);
      CHECK(run.code == 0);
      CHECK((run.wrong_bytes > 0) == (variant == "avx512"));
    }
  }
}

TEST_CASE("the kernel tests see an inverted table and its 32 x 32 blocks: a kernel with either wrong is caught", "[emit][kernels]") {
  // Control for the inverted-table cells above: the inverse filled with the wrong token (the mirror image
  // within the tokens moved) must move wrong bytes, and the kernel as emitted none.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  auto source = spec::load_layout(catalog.find_layout("llamacpp-vtrans").string());
  auto target = spec::load_layout(catalog.find_layout("vllm-flash-nhd").string());
  prove::Proof p = prove::prove(source, target, cache);
  emit::EmitOptions o;
  o.name = "inverted";
  const std::string code = emit::emit_kernel(p, o);
  emit::EmitOptions o_broken = o;
  o_broken.name = "broken_inverse";
  std::string broken = emit::emit_kernel(p, o_broken);
  const std::string fill = "= static_cast<int32_t>(token);";
  const std::size_t at = broken.find(fill);
  REQUIRE(at != std::string::npos);
  broken.replace(at, fill.size(), "= static_cast<int32_t>(num_tokens - 1 - token);");
  // And a kernel whose whole 32 x 32 blocks (every slot of a block holding a moved token) lose one column
  // per band: caught when all 67 tokens are moved, so slots 0..63 make two whole blocks.
  emit::EmitOptions o_block = o;
  o_block.name = "broken_block";
  std::string block = emit::emit_kernel(p, o_block);
  // Both the baseline's 8-row bands and the AVX2 variant's 16-row pairs of bands lose column 0.
  std::size_t replaced = 0;
  for (const auto& [transpose, zero] : {std::pair<std::string, std::string>{"kv_transpose8x8(r, c[q]);", "c[q][0] = _mm_setzero_si128();"},
                                        {"kv_transpose8x16(r, c[q]);", "c[q][0] = _mm256_setzero_si256();"}})
    for (std::size_t k = block.find(transpose); k != std::string::npos; k = block.find(transpose, k + 1), ++replaced)
      block.replace(k, transpose.size(), transpose + " " + zero);
  REQUIRE(replaced == 4);  // the block helper of both instruction-set variants carries both paths
  // And the AVX-512 helper the AVX2 variant takes for whole 32 x 32 blocks where the CPU has it (the
  // "avx512" variant): its first lane-transposed register zeroed.
  const std::string lanes = "  KV_UNROLL for (int L = 0; L < 4; ++L) {  // target rows 8 L .. 8 L + 7";
  const std::size_t lanes_at = block.find(lanes);
  REQUIRE(lanes_at != std::string::npos);
  REQUIRE(block.find(lanes, lanes_at + 1) == std::string::npos);
  block.insert(lanes_at, "  d[0][0] = _mm512_setzero_si512();\n");
  test::TempDir dir;
  test::KernelLibrary library({code, broken, block}, dir.path().string());
  const auto S = enumerate::enumerate_layout(source, cache), T = enumerate::enumerate_layout(target, cache);
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::int64_t n : {std::int64_t{37}, cache.params.at("num_tokens")}) {
      INFO(enumerate::table_choice_name(k) << " tables, num_tokens " << n);
      check_control(library, o.name, o_broken.name, S, T, k, n);
      if (n != cache.params.at("num_tokens")) continue;
      for (const std::string& variant : test::isa_variants()) {
        INFO(variant << " variant");
        test::ScopedIsa isa(variant);
        test::KernelRun no_column = test::run_against_oracle(library.find(o_block.name), S, T, k, n, 1);
        CHECK(no_column.code == 0);
        CHECK(no_column.wrong_bytes > 0);
      }
    }
  }
}

TEST_CASE("gathered rows staged in chunks of 256, into llama.cpp's transposed V and out of it, move exactly the oracle's bytes, and a burst written one element off or rows swapped are caught",
          "[emit][kernels]") {
  // Moves into llama.cpp's transposed V read a chunk of 256 gathered source rows (slots) per band of 32
  // target rows and write each target row one 512-byte burst from a stage (cpu.cpp, kGatheredChunk) where
  // the CPU picks it (KVLAYOUT_STAGE): with a gather buffer where the rows would be read in bands (HND
  // sources, stage_gathered_chunks), without it for rows read whole (vllm-flash-nhd's, has_staged_bursts);
  // otherwise the rows are read whole in straight blocks. Moves out of it take chunks of
  // 256 source rows (a head's dims, 512 channels here) per 32 gathered target rows as that alternative. The
  // other kernel tests move at most 67 tokens, so no chunk is whole there. Here 300 slots: the first chunk
  // of slots whole when all 300 tokens are moved (staged), the second cut (44 slots, straight blocks); with
  // 37 tokens moved every chunk of slots holds absent slots (straight blocks, whose bytes the oracle sees
  // stay poison). Where the rows are read in bands, a whole chunk's rows are first copied into a buffer
  // (cpu.cpp, gathered_chunk_bytes). Every kernel runs with the alternative taken and not. The controls: the
  // same kernels with each burst written one element off (run where the stage is taken), and with
  // neighbouring rows swapped in the copy.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  cache.params["head_size"] = 128;  // a head's 16-token block a page: HND rows are read in bands, and staged
  cache.params["num_tokens"] = 300;
  struct Staged {
    std::string name;
    enumerate::Enumerated source, target;
    bool gathered = false;     // a whole chunk's rows copied into a buffer first
    bool alternative = false;  // staged only where the CPU picks it (KVLAYOUT_STAGE)
  };
  std::vector<std::string> sources;
  std::vector<Staged> kernels;
  const std::string into_burst = "char* const burst = kv_to[r] + across1 * 2;";
  const std::string out_burst = "char* const burst = kv_to_rows[static_cast<size_t>(down0 + r)] + across1 * 2;";
  const std::string gather_row = "kv_chunk[r + k] + line, 64);";
  const std::vector<std::pair<std::string, std::string>> moves = {
      {"hf-dynamic", "llamacpp-vtrans"},     {"trtllm-pool", "llamacpp-vtrans"},      {"flashinfer-hnd", "llamacpp-vtrans"},
      {"vllm-flash-hnd", "llamacpp-vtrans"}, {"dynamo-universal", "llamacpp-vtrans"}, {"vllm-flash-nhd", "llamacpp-vtrans"},
      {"llamacpp-vtrans", "vllm-flash-nhd"}, {"llamacpp-vtrans", "sglang-mha"}};
  for (const auto& [from, to] : moves) {
    auto source = spec::load_layout(catalog.find_layout(from).string()), target = spec::load_layout(catalog.find_layout(to).string());
    prove::Proof p = prove::prove(source, target, cache);
    REQUIRE(emit::emittable(p.grade, false));
    emit::EmitOptions o;
    o.name = std::string("chunked_") + std::to_string(kernels.size());
    o.streaming_from_bytes = 0;
    std::string code = emit::emit_kernel(p, o);
    const std::string& burst = code.find(into_burst) != std::string::npos ? into_burst : out_burst;
    if (code.find(burst) == std::string::npos) continue;  // this move has no whole chunk to stage
    // One element later in a row's first chunk, one earlier in the others: never past the row's last
    // element (a row holds more than a chunk here), so the control writes wrong bytes inside the buffers
    // (written one element later throughout, the last row's last burst ran 2 bytes past its buffer: ASan).
    std::string off_by_one = burst;
    off_by_one.replace(off_by_one.find("across1 * 2"), 11, "(across1 == 0 ? 1 : across1 - 1) * 2");
    sources.push_back(code);
    sources.push_back(broken_kernel(p, o, o.name + "_broken", burst, off_by_one));
    Staged k{o.name, enumerate::enumerate_layout(source, cache), enumerate::enumerate_layout(target, cache)};
    k.gathered = code.find(gather_row) != std::string::npos;
    k.alternative = code.find("if (kv_staged_bursts.load(std::memory_order_relaxed))") != std::string::npos;
    if (k.gathered) sources.push_back(broken_kernel(p, o, o.name + "_swapped", gather_row, "kv_chunk[r + (k ^ 1)] + line, 64);"));
    INFO(from << " -> " << to);
    CHECK(k.alternative);  // staged only where the CPU picks it: HND rows with the buffer, the others without
    kernels.push_back(std::move(k));
  }
  // The HND sources staged with the buffer, vllm-flash-nhd's rows (read whole) and both moves out without it,
  // each as the alternative the CPU picks (see stage_gathered_chunks and has_staged_bursts in emit/cpu.cpp).
  REQUIRE(kernels.size() >= 6);
  CHECK(std::count_if(kernels.begin(), kernels.end(), [](const Staged& k) { return k.gathered; }) >= 4);
  CHECK(std::count_if(kernels.begin(), kernels.end(), [](const Staged& k) { return !k.gathered; }) >= 3);
  test::TempDir dir;
  test::KernelLibrary library(sources, dir.path().string());
  for (const Staged& c : kernels) {
    INFO(c.source.layout->name << " -> " << c.target.layout->name);
    for (const std::string& variant : test::isa_variants()) {
      for (bool staged : {false, true}) {
        test::ScopedIsa isa(variant, staged);
        for (std::size_t k = 0; k < 3; ++k) {
          for (std::int64_t n : {std::int64_t{300}, std::int64_t{37}}) {
            INFO(variant << " variant, staged bursts " << (staged ? "on" : "off") << ", " << enumerate::table_choice_name(k) << " tables, num_tokens " << n);
            test::KernelRun run = test::run_against_oracle(library.find(c.name), c.source, c.target, k, n, k == 1 ? 3 : 1);
            CHECK(run.code == 0);
            CHECK(run.wrong_bytes == 0);
            CHECK(run.moved > 0);
            // With 37 tokens no chunk of slots is whole: the broken burst is never written; an alternative
            // not taken writes none.
            if (n != 300 || (c.alternative && !staged)) continue;
            test::KernelRun broken = test::run_against_oracle(library.find(c.name + "_broken"), c.source, c.target, k, n, 1);
            CHECK(broken.code == 0);
            CHECK(broken.wrong_bytes > 0);
            if (!c.gathered) continue;
            test::KernelRun swapped = test::run_against_oracle(library.find(c.name + "_swapped"), c.source, c.target, k, n, 1);
            CHECK(swapped.code == 0);
            CHECK(swapped.wrong_bytes > 0);
          }
        }
      }
    }
  }
}

TEST_CASE("a run copied into a target a few bytes past its source modulo 4 KiB moves the oracle's bytes, and a broken backward copy is caught",
          "[emit][kernels]") {
  // kv_copy (emit/cpu.cpp) copies a run that could have been streamed backward where the target lies less
  // than 256 bytes past the source modulo 4 KiB (forward, each load waits on the store just issued). The
  // fixture places the target buffers 16 and 48 bytes past the source (as np.empty's arrays lie) and
  // compares every byte; the control stores each backward step 16 (AVX2) or 8 (SSE2) bytes off.
  const SixteenKibRuns r = sixteen_kib_runs();
  const prove::Proof& p = r.proof;
  emit::EmitOptions o;
  o.name = "near_runs";
  const std::string code = emit::emit_kernel(p, o);
  REQUIRE(code.find("else kv_copy<16384>(") != std::string::npos);
  emit::EmitOptions o_broken = o;
  o_broken.name = "near_runs_broken";
  std::string broken = emit::emit_kernel(p, o_broken);
  std::size_t replaced = 0;
  for (const auto& [step, off] : {std::pair<std::string, std::string>{"_mm256_storeu_si256(reinterpret_cast<__m256i*>(to + k - 32)",
                                                                      "_mm256_storeu_si256(reinterpret_cast<__m256i*>(to + k - 16)"},
                                  {"_mm_storeu_si128(reinterpret_cast<__m128i*>(to + k - 16)", "_mm_storeu_si128(reinterpret_cast<__m128i*>(to + k - 8)"}})
    for (std::size_t k = broken.find(step); k != std::string::npos; k = broken.find(step, k + 1), ++replaced) broken.replace(k, step.size(), off);
  REQUIRE(replaced >= 3);  // kv_copy's step in the AVX2 variant and in the baseline's (and the portable fallback's)
  test::TempDir dir;
  test::KernelLibrary library({code, broken}, dir.path().string());
  const auto &S = r.source, &T = r.target;
  for (const std::string& variant : test::isa_variants()) {
    test::ScopedIsa isa(variant);
    for (std::size_t k = 0; k < 3; ++k) {
      for (std::size_t shift : {std::size_t{0}, std::size_t{16}, std::size_t{48}}) {
        INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables, target " << shift << " bytes past the source");
        test::KernelRun run = test::run_against_oracle(library.find(o.name), S, T, k, 67, 1, test::Placement::shifted(shift));
        CHECK(run.code == 0);
        CHECK(run.wrong_bytes == 0);
        CHECK(run.moved > 0);
        if (shift == 0) continue;  // unshifted buffers lie wherever the allocator put them
        test::KernelRun bad = test::run_against_oracle(library.find(o_broken.name), S, T, k, 67, 1, test::Placement::shifted(shift));
        CHECK(bad.code == 0);
        CHECK(bad.wrong_bytes > 0);
      }
    }
  }
}

TEST_CASE("runs streamed into a target off a line move the oracle's bytes in either nest, and broken copies are caught", "[emit][kernels]") {
  // Kernels stream into any 16-byte aligned target (emit/cpu.cpp, kv_stream_copy): np.empty's arrays start
  // 16 bytes past a page. LMCache's two-tier cache into vLLM's flash cache reads its 16 KiB runs in the
  // source's order where every target starts on a line, and in the target's order (cell0_off_lines)
  // where one does not. Streaming is forced (streaming_from_bytes 0) and the targets are placed 64 (on a
  // line), 16, 32 and 48 bytes past a page. Controls: the AVX2 copy's leading 16-byte store dropped (taken
  // where the target is 16 bytes off 32), and the block at target offset 0 skipped in one nest only.
  const SixteenKibRuns r = sixteen_kib_runs();
  emit::EmitOptions o;
  o.streaming_from_bytes = 0;
  o.name = "lines_off";
  const std::string code = emit::emit_kernel(r.proof, o);
  REQUIRE(code.find("(kv_lines ? cell0 : cell0_off_lines)(") != std::string::npos);
  auto broken = [&](const std::string& name, const std::function<std::size_t(std::string&)>& edit) {
    emit::EmitOptions b = o;
    b.name = name;
    std::string text = emit::emit_kernel(r.proof, b);
    REQUIRE(edit(text) == 2);  // once in each instruction-set variant
    return text;
  };
  auto no_lead = [](std::string& text) {
    const std::string lead =
        "if (k != 0) _mm_stream_si128(reinterpret_cast<__m128i*>(to), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));";
    std::size_t replaced = 0;
    for (std::size_t at = text.find(lead); at != std::string::npos; at = text.find(lead, at), ++replaced) text.replace(at, lead.size(), "(void)k;");
    return replaced;
  };
  auto skip_first_block_in = [](const std::string& function) {
    return [function](std::string& text) {
      const std::string copy = "if (stream) kv_stream_copy<16384>(pT + oT2 * 2, ";
      std::size_t replaced = 0;
      for (std::size_t at = text.find("static void " + function + "("); at != std::string::npos;
           at = text.find("static void " + function + "(", at + 1), ++replaced) {
        const std::size_t c = text.find(copy, at);
        REQUIRE(c != std::string::npos);
        text.insert(c, "if (oT2 == 0) {} else ");  // the block at target offset 0 is not copied
      }
      return replaced;
    };
  };
  const std::string lead = broken("lines_off_no_lead", no_lead), on = broken("lines_on_skip", skip_first_block_in("cell0")),
                    off = broken("lines_off_skip", skip_first_block_in("cell0_off_lines"));
  test::TempDir dir;
  test::KernelLibrary library({code, lead, on, off}, dir.path().string());
  int lead_caught = 0;
  for (const std::string& variant : test::isa_variants()) {
    test::ScopedIsa isa(variant);
    for (std::size_t k = 0; k < 3; ++k) {
      for (std::size_t shift : {std::size_t{64}, std::size_t{16}, std::size_t{32}, std::size_t{48}}) {
        INFO(variant << " variant, " << enumerate::table_choice_name(k) << " tables, target " << shift << " bytes past a page");
        test::KernelRun run = test::run_against_oracle(library.find(o.name), r.source, r.target, k, 67, 1, test::Placement::shifted_past_page(shift));
        CHECK(run.code == 0);
        CHECK(run.wrong_bytes == 0);
        CHECK(run.moved > 0);
        auto wrong = [&](const char* name) {
          test::KernelRun bad = test::run_against_oracle(library.find(name), r.source, r.target, k, 67, 1, test::Placement::shifted_past_page(shift));
          CHECK(bad.code == 0);
          return bad.wrong_bytes;
        };
        // Only the AVX2 copy has the leading store (the "avx512" variant runs it too), taken where the target
        // is 16 bytes off 32.
        const bool leads = variant != "baseline" && shift % 32 == 16;
        const std::int64_t lead_wrong = wrong("lines_off_no_lead");
        CHECK((lead_wrong > 0) == leads);
        lead_caught += lead_wrong > 0;
        // The skipped block is whole (so copied by the broken line) where block 0 of the target holds one
        // of the first four blocks: always under identity tables, not always under the others.
        const bool on_caught = wrong("lines_on_skip") > 0, off_caught = wrong("lines_off_skip") > 0;
        CHECK(!(on_caught && shift != 64));
        CHECK(!(off_caught && shift == 64));
        if (k == 0) CHECK((on_caught ? 1 : 0) + (off_caught ? 1 : 0) == 1);
      }
    }
  }
  const auto variants = test::isa_variants();
  CHECK(lead_caught == 6 * static_cast<int>(std::count_if(variants.begin(), variants.end(), [](const std::string& v) { return v != "baseline"; })));
}

TEST_CASE("the kernel tests see sparse gathered target rows written whole: a kernel that swaps two source rows is caught", "[emit][kernels]") {
  // Control for the gathered-tile order where the target's rows are sparse (see gathered_rows_dense in
  // emit/cpu.cpp): llama.cpp's transposed V into vLLM's packed NHD cache, whose rows of one head's V lie
  // between K's. The broken kernel reads source rows r and r ^ 1 swapped (dims 2k and 2k + 1 of a head).
  // The rows are written whole only where the CPU picks it (KVLAYOUT_SPARSE_ROWS), so the staged choices are on.
  ControlKernels c = control_kernels("llamacpp-vtrans", "vllm-packed-nhd", "sparse_rows", "swapped_rows");
  const std::string fill = "kv_from_rows[static_cast<size_t>(r)] = pS + (";
  std::size_t replaced = 0;
  for (std::size_t k = c.broken.find(fill); k != std::string::npos; k = c.broken.find(fill, k + 1)) {
    const std::size_t step = c.broken.find(" + r * INT64_C(", k);
    REQUIRE(step != std::string::npos);
    c.broken.replace(step, 7, " + (r ^ 1) * ");
    ++replaced;
  }
  REQUIRE(replaced == 2);  // the cell of both instruction-set variants
  CHECK_THAT(c.good, Catch::Contains("if (kv_sparse_rows_whole.load(std::memory_order_relaxed))"));
  CHECK_THAT(c.good, !Catch::Contains("if (kv_staged_bursts.load(std::memory_order_relaxed))"));  // its own choice, not the staged bursts'
  check_controls(c, true, c.cache.params.at("num_tokens"), true);
}

TEST_CASE("the kernel tests see a gathered source row read whole: a kernel whose coalesced axis stops after one head is caught",
          "[emit][kernels]") {
  // Control for the coalesced down axis of gathered source rows (head*dim of SGLang's token pool, read per
  // token into legacy V's token-fastest rows): the kernel as emitted moves every byte; the same kernel with
  // the axis cut to its first head's dims leaves the other heads unmoved, which the oracle must see.
  ControlKernels c = control_kernels("sglang-mha", "vllm-paged-legacy", "coalesced", "one_head");
  const std::int64_t heads = c.cache.params.at("num_kv_heads"), dims = c.cache.params.at("head_size");
  REQUIRE(c.good.find("head*dim (source-contiguous)") != std::string::npos);
  std::string& cut = c.broken;
  const std::string bound = "down0 < INT64_C(" + std::to_string(heads * dims) + ")";
  std::size_t replaced = 0;
  for (std::size_t k = cut.find(bound); k != std::string::npos; k = cut.find(bound, k + 1), ++replaced)
    cut.replace(k, bound.size(), "down0 < INT64_C(" + std::to_string(dims) + ")");
  REQUIRE(replaced == 2);  // the cell of both instruction-set variants
  check_controls(c, false, c.cache.params.at("num_tokens"));
}

TEST_CASE("the kernel tests see a 16-token block's gathered rows moved in half-line bands: a kernel whose bands lose a column there is caught",
          "[emit][kernels]") {
  // Control for kv_transpose_row_groups<2> (emit/cpu.cpp): SGLang's token pool into legacy V's token-fastest
  // rows gathers a block's 16 token rows, and each channel's 16 tokens are one 32-byte half line. The
  // broken kernel zeroes column 0 of every 8 x 8 (baseline) or 8 x 16 (AVX2) transpose in the 16-row
  // groups alone, so the oracle sees it only if those groups carry the kernel's whole blocks.
  ControlKernels c = control_kernels("sglang-mha", "vllm-paged-legacy", "half_lines", "half_lines_no_column");
  std::size_t replaced = 0;
  for (const auto& [transpose, zero] : {std::pair<std::string, std::string>{"kv_transpose8x8(r, c[q]);", "c[q][0] = _mm_setzero_si128();"},
                                        {"kv_transpose8x16(r, c[q]);", "c[q][0] = _mm256_setzero_si256();"}})
    for (std::size_t k = c.broken.find(transpose); k != std::string::npos; k = c.broken.find(transpose, k + 1), ++replaced)
      c.broken.replace(k, transpose.size(), transpose + " if (GROUPS == 2) " + zero);
  REQUIRE(replaced == 4);  // both paths of both instruction-set variants
  check_controls(c, true, c.cache.params.at("num_tokens"));
}

TEST_CASE("the kernel tests see a whole-block copy: a kernel that copies a block num_tokens cuts is caught", "[emit][kernels]") {
  // Control for the whole-block copies (LMCache's token rows into vLLM blocks: one copy per block of 16
  // tokens when all of them are moved). With the check that the block's last token is moved removed, the
  // block num_tokens cuts is copied whole, over positions no moved token holds.
  ControlKernels c = control_kernels("lmcache-2ltd", "vllm-flash-nhd", "whole_blocks", "past_num_tokens");
  std::string& cut = c.broken;
  const std::string marker = "// Every token of the block moved: one copy.";
  std::size_t replaced = 0;
  for (std::size_t k = cut.find(marker); k != std::string::npos; k = cut.find(marker, k + 1), ++replaced) {
    const std::size_t condition = cut.find("if (", k);
    REQUIRE(condition != std::string::npos);
    cut.insert(condition + 4, "true || ");
  }
  REQUIRE(replaced == 4);  // the cell's two nests (targets on and off a line) in both instruction-set variants
  // 40 of the 67 tokens: the broken kernel copies block 32..47 whole, and tokens 40..47 still lie inside
  // the source (at 67 it would read past the source's end, which the sanitizer run reports).
  check_controls(c, true, 40);
}

TEST_CASE("a FlashInfer page copied whole past its kv and head loops moves the oracle's bytes, and a page copy a head short is caught",
          "[emit][kernels]") {
  // Control for the whole block taking in the loops around it (emit/cpu.cpp, whole_block): FlashInfer's HND
  // page holds K and V of every head in one span on both sides of flashinfer-hnd -> flashinfer072-hnd (4 KiB
  // on the small cache: 2 x 4 heads x 16 tokens x 16 dims), so a page whose 16 tokens are all moved is one
  // copy (four pages at a time), and the page num_tokens cuts is copied run by run. The broken kernel
  // copies each whole page one head's 512-byte block short, so the last head's value block stays unwritten.
  ControlKernels c = control_kernels("flashinfer-hnd", "flashinfer072-hnd", "whole_pages", "pages_a_head_short");
  std::size_t replaced = 0;
  for (const auto& [whole, short_copy] : {std::pair<std::string, std::string>{"kv_stream_copy4<4096>(", "kv_stream_copy4<3584>("},
                                          {"kv_copy<4096>(pT + oT1 * 2, pS + oS1 * 2)", "kv_copy<3584>(pT + oT1 * 2, pS + oS1 * 2)"},
                                          {"kv_stream_copy<4096>(kv_block_to[b]", "kv_stream_copy<3584>(kv_block_to[b]"}})
    for (std::size_t k = c.broken.find(whole); k != std::string::npos; k = c.broken.find(whole, k + 1), ++replaced)
      c.broken.replace(k, whole.size(), short_copy);
  REQUIRE(replaced == 6);  // the four-at-a-time copy, the plain copy and the flush, in both instruction-set variants
  check_controls(c, true, c.cache.params.at("num_tokens"));
}

TEST_CASE("runs of pages copied in two or four streams move the oracle's bytes, and a copy whose last stream skips a line is caught",
          "[emit][kernels]") {
  // Control for kv_stream_copy's runs of pages (8 KiB and more, AVX2, streamed into 32-byte aligned
  // targets): with 128-element heads, LMCache's token rows into vLLM's blocks are 16 KiB blocks (four
  // streams), and DeepSeek's latents into vLLM's MLA blocks 18 KiB (four streams, then 2 KiB copied on
  // one). Blocks of 8 KiB are copied four at a time (whole_blocks_at_once), and two page streams copy those
  // a part leaves pending: vLLM 0.33's packed pages reordered, one layer of two heads, 53 tokens (three
  // whole blocks a head, two left pending on one thread). The broken kernel's last stream skips its page's
  // last line.
  struct Case {
    const char* source;
    const char* target;
    const char* copy;  // the copy whose runs of pages the case takes
    std::map<std::string, std::int64_t> params;
    std::vector<std::int64_t> token_counts;
  };
  const std::vector<Case> cases = {{"lmcache-2ltd", "vllm-flash-nhd", "if (stream) kv_stream_copy<16384>(", {}, {67, 37}},
                                   {"lmcache-mla", "vllm-mla", "if (stream) kv_stream_copy<18432>(", {}, {67, 37}},
                                   {"vllm033-lhbnc", "vllm033-lbhnc", "for (int b = 0; b < kv_blocks; ++b) kv_stream_copy<8192>(",
                                    {{"num_layers", 1}, {"num_kv_heads", 2}}, {53}}};
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const std::string skip = "const int64_t at = k + s * 4096 + kv_staggered<4096>(line, s);";
  for (const Case& k_case : cases) {
    INFO(k_case.source << " -> " << k_case.target);
    spec::CacheShape cache = spec::load_cache(catalog.find_cache("small").string());
    cache.params["head_size"] = 128;
    for (const auto& [key, value] : k_case.params) cache.params[key] = value;
    ControlKernels c{cache, spec::load_layout(catalog.find_layout(k_case.source).string()), spec::load_layout(catalog.find_layout(k_case.target).string()),
                     "pages", "last_line_skipped", {}, {}};
    const prove::Proof p = prove::prove(c.source, c.target, c.cache);
    emit::EmitOptions o;
    o.streaming_from_bytes = 0;
    o.name = c.good_name;
    c.good = emit::emit_kernel(p, o);
    o.name = c.broken_name;
    c.broken = emit::emit_kernel(p, o);
    REQUIRE(c.good.find(k_case.copy) != std::string::npos);
    std::size_t replaced = 0;
    for (std::size_t at = c.broken.find(skip); at != std::string::npos; at = c.broken.find(skip, at + skip.size()), ++replaced)
      c.broken.replace(at, skip.size(), skip + " if (s == streams - 1 && line == 4032) continue;");
    REQUIRE(replaced == 2);  // the copy routine's text in both variants (compiled in the AVX2 one alone)
    test::TempDir dir;
    test::KernelLibrary library({c.good, c.broken}, dir.path().string());
    const auto S = enumerate::enumerate_layout(c.source, c.cache), T = enumerate::enumerate_layout(c.target, c.cache);
    for (std::int64_t n : k_case.token_counts) {
      for (std::size_t k = 0; k < 3; ++k) {
        INFO(enumerate::table_choice_name(k) << " tables, num_tokens " << n);
        for (const std::string& variant : test::isa_variants()) {
          INFO(variant << " variant");
          test::ScopedIsa isa(variant);
          const test::KernelRun good = test::run_against_oracle(library.find(c.good_name), S, T, k, n, k == 1 ? 3 : 1);
          CHECK(good.code == 0);
          CHECK(good.wrong_bytes == 0);
          CHECK(good.moved > 0);
        }
        if (!cpu_has_avx2()) continue;  // the runs of pages are the AVX2 variant's
        test::ScopedIsa isa("avx2");
        const test::KernelRun bad = test::run_against_oracle(library.find(c.broken_name), S, T, k, n, 1);
        CHECK(bad.code == 0);
        CHECK(bad.wrong_bytes > 0);
      }
    }
  }
  if (!cpu_has_avx2()) WARN("this CPU has no AVX2: the broken runs of pages were not run");
}

TEST_CASE("the kernel tests see a sibling group's offsets: a nest that copies V from K's place or into K's tensor is caught", "[emit][kernels]") {
  // Control for sibling groups (emit/sibling_cells.hpp): vLLM 0.33's packed pages hold a head's K then its
  // V, so K and V into SGLang's per-layer buffers are one loop nest copying two runs, V's at the source
  // offset + head_size and into the V buffers (instance + num_layers). Each broken kernel drops one of
  // those two constants, which the oracle must see.
  for (const std::string broken : {"source_shift", "instance_shift"}) {
    INFO(broken << " dropped");
    ControlKernels c = control_kernels("vllm033-lbnhc", "sglang-mha", "siblings", broken);
    REQUIRE(c.good.find("// With cell 1: the same nest, at other offsets.") != std::string::npos);
    const std::int64_t head_size = c.cache.params.at("head_size"), layers = c.cache.params.at("num_layers");
    const std::string pointer = "pT1 = static_cast<char*>(T[INT64_C(";
    const std::string from = broken == "source_shift" ? " + INT64_C(" + std::to_string(head_size) + ")) * 2" : pointer + std::to_string(layers) + ")";
    const std::string to = broken == "source_shift" ? " + INT64_C(0)) * 2" : pointer + "0)";
    std::size_t replaced = 0;
    for (std::size_t k = c.broken.find(from); k != std::string::npos; k = c.broken.find(from, k + to.size()), ++replaced)
      c.broken.replace(k, from.size(), to);
    // V's source offset in its prefetch and copies, or its target pointer, in both instruction-set variants.
    REQUIRE(replaced >= (broken == "source_shift" ? 4u : 2u));
    check_controls(c, true, c.cache.params.at("num_tokens"));
  }
}

TEST_CASE("the kernel tests see a runs nest led by a tile's loops: a K nest that skips the last head is caught", "[emit][kernels]") {
  // Control for interleaved passes led by the tile's loops (emit/pass_alignment.hpp): vLLM 0.33's bhlnc
  // pages into llama.cpp, whose K runs are walked (head, layer) outermost as V's tile is (the pages whose
  // tile walks the head innermost have their K ride the tile instead: riding_runs.hpp). The broken kernel's
  // K nest skips the flattened iterations of the last head (as a split of the (head, layer) iterations over
  // threads and passes that lost one would), leaving that head's K unmoved, which the oracle must see.
  ControlKernels c = control_kernels("vllm033-bhlnc", "llamacpp-vtrans", "led_by_tile", "last_head_skipped");
  REQUIRE(c.good.find("cell 0 (kv_cache -> k; kv 0..0): loops head layer ") != std::string::npos);
  REQUIRE(c.good.find("inside cell 1's row blocks") == std::string::npos);
  const std::string split = "const int64_t head = flat / E1, layer = flat % E1;";
  std::size_t replaced = 0;
  for (std::size_t nest = c.broken.find("static void cell0("); nest != std::string::npos; nest = c.broken.find("static void cell0(", nest + 1)) {
    const std::size_t at = c.broken.find(split, nest);
    REQUIRE(at != std::string::npos);
    REQUIRE(at < c.broken.find("static void cell1(", nest));  // in K's nest, not V's
    c.broken.replace(at, split.size(), split + " if (head == E0 - 1) continue;");
    ++replaced;
  }
  REQUIRE(replaced == 2);  // the nest of both instruction-set variants
  check_controls(c, true, c.cache.params.at("num_tokens"));
}

TEST_CASE("the kernel tests see K riding V's row blocks: a kernel whose K skips each block's last row, or whose folded blocks read head 0's columns, is caught",
          "[emit][kernels]") {
  // Controls for riding runs (emit/riding_runs.hpp): vLLM 0.33's blnhc pages into llama.cpp, whose K runs
  // are copied inside V's row blocks and whose head is walked inside them. The first broken kernel's K
  // skips the last row of every block of 32 (a rider loop one short); the second's blocks read every
  // head's V at head 0's columns (a folded mode's source step lost).
  for (const std::string broken : {"rider_row_short", "fold_step_lost"}) {
    INFO(broken);
    ControlKernels c = control_kernels("vllm033-blnhc", "llamacpp-vtrans", "ridden", broken);
    REQUIRE(c.good.find("cell 0 (kv_cache -> k; kv 0..0): loops layer head token_div16 token_mod16; run 16 element(s) dim, inside cell 1's row blocks") !=
            std::string::npos);
    REQUIRE(c.good.find("head walked inside the row blocks, cell 0's runs copied from the same rows") != std::string::npos);
    const std::string from = broken == "rider_row_short" ? "if (kv_token < 0) continue;" : "kv_from_rows.data() + across0, (head * INT64_C(";
    const std::string to = broken == "rider_row_short" ? "if (kv_token < 0 || r + 1 == acrosses) continue;" : "kv_from_rows.data() + across0, (0 * INT64_C(";
    std::size_t replaced = 0;
    for (std::size_t k = c.broken.find(from); k != std::string::npos; k = c.broken.find(from, k + 1), ++replaced) c.broken.replace(k, from.size(), to);
    REQUIRE(replaced == 2);  // the cell of both instruction-set variants
    check_controls(c, true, c.cache.params.at("num_tokens"));
  }
}

TEST_CASE("staged boxes move the oracle's bytes, and broken staging is caught", "[emit][kernels]") {
  // Out of the legacy cache into vLLM's flash cache: the key packs of a whole block are staged in the
  // source's order, four quarters at once (emit/source_box.hpp), and the value tiles are staged and
  // streamed out a box behind (print_copy's whole-line transposes). Heads of 32 bf16 make the value
  // box's columns whole lines; streaming is forced. The key box is streamed out a box behind too, a piece
  // per step of its quarters (staged_runs_pieces). Controls: every quarter reading the first one's heads,
  // the pending box streamed from the buffer being staged (in the value tiles, and in the key box), and
  // the last pending box never streamed out. A box of 4 KiB has no straight alternative.
  const StreamingPair pair = streaming_pair("vllm-paged-legacy", "vllm-flash-nhd", {{"head_size", 32}}, "staged");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  REQUIRE(code.find("kv_quarter_at") != std::string::npos);
  REQUIRE(code.find("kv_pending = ") != std::string::npos);
  REQUIRE(code.find("kv_staged_boxes.load(") == std::string::npos);
  // Each step prefetches the next block's same step (32 columns of 16-token rows: 1 KiB).
  REQUIRE(code.find("kv_prefetch_run<1024>(pS + oS1 * 2 + (source_next + across_at * INT64_C(16)) * 2);") != std::string::npos);
  check_edits_caught_everywhere(
      pair, code,
      {{"staged_one_quarter", "const int64_t head = kv_quarter * ", "const int64_t head = 0 * kv_quarter * "},
       {"staged_wrong_buffer", "kv_stages[kv_half ^ 1] + q * ", "kv_stages[kv_half] + q * "},
       {"staged_runs_wrong_buffer", "kv_stages[kv_half ^ 1] + (kv_quarter_at * ", "kv_stages[kv_half] + (kv_quarter_at * "},
       {"staged_no_flush", "if (kv_pending != nullptr) kv_stream_copy<4096>(kv_pending, ", "if (false) kv_stream_copy<4096>(kv_pending, "}});
}

TEST_CASE("large value and key boxes streamed straight where the CPU takes them move the oracle's bytes, and broken steps are caught", "[emit][kernels]") {
  // Heads of 128 bf16 make the legacy value and key boxes 16 KiB (kStraightBoxBytes): where the
  // call's CPU streams such boxes straight (KVLAYOUT_STAGE_BOXES=off), the staged boxes' steps write the
  // target, the values by kv_transpose_lines16 and the key packs a kilobyte at a time by kv_pack_lines16
  // (pack_lines). Controls, straight: every value step written to the first step's columns, and every one
  // read from the first's; every key step written to the first step's line of each row, and every one read
  // from the first's; staged (KVLAYOUT_STAGE_BOXES=on): the pending box streamed from the buffer being staged.
  const StreamingPair pair = streaming_pair("vllm-paged-legacy", "vllm-flash-nhd", {{"head_size", 128}}, "straight");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  const std::string straight = "kv_transpose_lines16(kv_rows_apart{pT + oT1 * 2 + (across_at + down0 * ";
  const std::string key_lines = "kv_pack_lines16(kv_rows_apart{pT + (oT1 + kv_to) * 2, INT64_C(1024)}, pS + oS1 * 2 + kv_step * INT64_C(1024), true);";
  REQUIRE(code.find("if (!kv_staged_boxes.load(std::memory_order_relaxed))") != std::string::npos);
  REQUIRE(code.find(straight) != std::string::npos);
  REQUIRE(code.find(key_lines) != std::string::npos);
  // Each straight step prefetches the next block's same kilobyte where the CPU takes it
  // (kv_straight_box_prefetches), the values' and the keys' alike: on in the baseline variant below, off in
  // the others (test::ScopedIsa's prefetches), so the oracle sees the boxes both ways.
  const std::string chosen = "if (kv_straight_box_prefetches.load(std::memory_order_relaxed)) ";
  CHECK(code.find(chosen + "kv_prefetch_run<1024>(pS + oS1 * 2 + (source_next + across_at * INT64_C(16)) * 2);") != std::string::npos);
  CHECK(code.find(chosen + "kv_prefetch_run<1024>(pS + (oS1 + source_next) * 2 + kv_step * INT64_C(1024));") != std::string::npos);
  check_edits_caught_everywhere(pair, code,
                                {{"straight_one_target_step", straight, "kv_transpose_lines16(kv_rows_apart{pT + oT1 * 2 + (0 * across_at + down0 * "},
                                 {"straight_one_source_step", "INT64_C(16) + down0) * 2, INT64_C(32), true);", "0 * INT64_C(16) + down0) * 2, INT64_C(32), true);"},
                                 {"key_lines_one_target_step", "kv_rows_apart{pT + (oT1 + kv_to) * 2", "kv_rows_apart{pT + (oT1 + 0 * kv_to) * 2"},
                                 {"key_lines_one_source_step", "pS + oS1 * 2 + kv_step * INT64_C(1024), true);", "pS + oS1 * 2 + 0 * kv_step * INT64_C(1024), true);"}},
                                false);
  check_edits_caught_everywhere(pair, code, {{"large_staged_wrong_buffer", "kv_stages[kv_half ^ 1] + q * ", "kv_stages[kv_half] + q * "}}, true);
}

TEST_CASE("a straight key box that no step of its nest encloses prefetches the layer ahead, and moves the oracle's bytes", "[emit][kernels]") {
  // Into SGLang's page_first host pool, the legacy key block's box (16 KiB at heads of 128 bf16) lies
  // inside the layer loop. At 8 layers (as at llama-3.1-8b's 32) the nest's step prefetch is the runs'
  // own, further in, so the box's straight steps prefetch the same kilobyte of the next layer's tensor
  // (box_instance_step); at 2 layers the nest's step is the next block, which encloses the box and is
  // prefetched instead (the control: no instance pointer). Each kernel runs against the oracle with the
  // prefetches on (baseline variant) and off, its control caught.
  for (const std::int64_t layers : {std::int64_t{8}, std::int64_t{2}}) {
    INFO(layers << " layers");
    const StreamingPair pair = streaming_pair("vllm-paged-legacy", "sglang-host-page-first", {{"head_size", 128}, {"num_layers", layers}},
                                              "box_ahead" + std::to_string(layers));
    const std::string code = emit::emit_kernel(pair.proof, pair.options);
    REQUIRE(code.find("kv_pack_lines16(kv_rows_apart{") != std::string::npos);
    CHECK((code.find("kv_prefetch_run<1024>(pS_box_next + ") != std::string::npos) == (layers == 8));
    CHECK(code.find("if (kv_straight_box_prefetches.load(std::memory_order_relaxed)) kv_prefetch_run<1024>(") != std::string::npos);
    check_edits_caught_everywhere(pair, code, {{"pack_lines_one_source_step" + std::to_string(layers), " + kv_step * INT64_C(1024), true);",
                                                " + 0 * kv_step * INT64_C(1024), true);"}},
                                  false);
  }
}

TEST_CASE("a legacy key block streamed straight into head-major blocks, each head's rows apart, moves the oracle's bytes, and broken steps are caught",
          "[emit][kernels]") {
  // Heads of 128 bf16 into vLLM's HND flash cache: the key nest has no staged box (its paired loops are
  // adjacent), but its block of 4 heads (16 KiB, kStraightBoxBytes) makes whole lines (pack_lines_box),
  // so where the call's CPU streams boxes straight (KVLAYOUT_STAGE_BOXES=off) each kilobyte step writes
  // one line of each of a head's 16 token rows, the pages four at a time; a cut block (37 tokens) takes the
  // paired nest. Streaming is forced. Controls, straight: every step written to head 0's rows, rows half
  // as far apart, and every step read from the first kilobyte.
  const StreamingPair pair = streaming_pair("vllm-paged-legacy", "vllm-flash-hnd", {{"head_size", 128}}, "head_lines");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  const std::string key_lines = "kv_pack_lines16(kv_rows_apart{pT + (oT1 + kv_to) * 2, INT64_C(256)}, pS + oS1 * 2 + kv_step * INT64_C(1024), true);";
  REQUIRE(code.find(key_lines) != std::string::npos);
  check_edits_caught_everywhere(pair, code,
                                {{"head_lines_first_head", "kv_rows_apart{pT + (oT1 + kv_to) * 2", "kv_rows_apart{pT + (oT1 + kv_to % INT64_C(2048)) * 2"},
                                 {"head_lines_rows_closer", "kv_to) * 2, INT64_C(256)}", "kv_to) * 2, INT64_C(128)}"},
                                 {"head_lines_one_source_step", "pS + oS1 * 2 + kv_step * INT64_C(1024), true);", "pS + oS1 * 2 + 0 * kv_step * INT64_C(1024), true);"}},
                                false);
}

TEST_CASE("a large legacy block streamed straight into a slot pool's gathered rows, values and keys, moves the oracle's bytes, and broken rows are caught",
          "[emit][kernels]") {
  // Heads of 128 bf16 into SGLang's token pool: the value and key boxes (16 KiB each) are at least
  // kStraightBoxBytes, so where the call's CPU streams boxes straight (KVLAYOUT_STAGE_BOXES=off) each step
  // writes one whole line of each of the block's 16 slot rows where the slot table places it, values by
  // kv_transpose_lines16 and key packs by kv_pack_lines16; a cut block (37 tokens) takes the blocks
  // straight. Streaming is forced. Controls, straight: the value steps all written to the rows' first line,
  // two slots' key rows swapped, and the key steps all read from the first kilobyte; staged
  // (KVLAYOUT_STAGE_BOXES=on): the value box's rows streamed out of their neighbours' place.
  const StreamingPair pair = streaming_pair("vllm-paged-legacy", "sglang-mha", {{"head_size", 128}}, "rows_straight");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  const std::string value_lines = "kv_transpose_lines16(kv_rows_placed{kv_to_rows.data(), across_at * 2}, ";
  REQUIRE(code.find(value_lines) != std::string::npos);
  REQUIRE(code.find("kv_pack_lines16(kv_rows_placed{kv_rows, kv_to * 2}, ") != std::string::npos);
  // The straight value steps prefetch the next block's step where the CPU takes it (on in the baseline
  // variant below, off in the others).
  CHECK(code.find("if (kv_straight_box_prefetches.load(std::memory_order_relaxed)) kv_prefetch_run<1024>(") != std::string::npos);
  check_edits_caught_everywhere(pair, code,
                                {{"rows_straight_one_step", value_lines, "kv_transpose_lines16(kv_rows_placed{kv_to_rows.data(), 0 * across_at * 2}, "},
                                 {"key_lines_swapped_rows", "kv_rows[token_mod16] = ", "kv_rows[token_mod16 ^ 1] = "},
                                 {"key_lines_one_source_step", " + kv_step * INT64_C(1024), true);", " + 0 * kv_step * INT64_C(1024), true);"}},
                                false);
  check_edits_caught_everywhere(pair, code, {{"rows_staged_swapped_rows", "kv_box + r * ", "kv_box + (r ^ 1) * "}}, true);
}

TEST_CASE("a legacy block staged whole into a slot pool's gathered rows, values and keys, moves the oracle's bytes, and broken rows are caught", "[emit][kernels]") {
  // Out of the legacy cache into SGLang's token pool: each block's value box (4 heads of 32 bf16 by 16
  // slots) is transposed into a buffer, pages four at a time, and each slot's row streamed out whole to the
  // row its slot table gives (staged_rows_box_bytes); its key packs are staged the same way, row by row
  // (staged_runs_into_rows); a cut block (37 tokens) takes the blocks straight. Streaming is forced.
  // Controls: value rows streamed out of their neighbours' place in the box, the box's steps all
  // transposed into its first 32 columns, and key rows streamed out of their neighbours' place.
  const StreamingPair pair = streaming_pair("vllm-paged-legacy", "sglang-mha", {{"head_size", 32}}, "rows_box");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  REQUIRE(code.find("bool kv_whole_box = stream && kv_downs == 16;") != std::string::npos);
  REQUIRE(code.find("each target row then streamed out whole") != std::string::npos);  // the key packs' box (staged_runs_into_rows)
  check_edits_caught_everywhere(pair, code,
                                {{"rows_box_swapped_rows", "kv_box + r * ", "kv_box + (r ^ 1) * "},
                                 {"rows_box_one_step", "kv_transpose_lines16(kv_rows_apart{kv_box + across_at * ", "kv_transpose_lines16(kv_rows_apart{kv_box + 0 * across_at * "},
                                 {"key_rows_swapped", "kv_stage + token_mod16 * ", "kv_stage + (token_mod16 ^ 1) * "}});
}

TEST_CASE("a slot pool's gathered key rows staged into a legacy block move the oracle's bytes, and broken rows are caught", "[emit][kernels]") {
  // Out of SGLang's token pool into the legacy cache: each block's key packs are read out of its 16 slot
  // rows (4 heads of 32 bf16 each), four rows at a time, into a buffer in the legacy order, which is then
  // streamed out (staged_runs_from_rows); a cut block (37 tokens) goes run by run. Streaming is forced.
  // Controls: each run read from its neighbour's row, and each run written to its neighbour's slot.
  const StreamingPair pair = streaming_pair("sglang-mha", "vllm-paged-legacy", {{"head_size", 32}}, "rows_from");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  REQUIRE(code.find("staged out of its gathered source rows") != std::string::npos);
  check_edits_caught_everywhere(pair, code,
                                {{"rows_from_swapped_rows", "kv_rows[token_mod16] + kv_at", "kv_rows[token_mod16 ^ 1] + kv_at"},
                                 {"rows_from_swapped_slots", "kv_stage + (token_mod16 * ", "kv_stage + ((token_mod16 ^ 1) * "}});
}

TEST_CASE("moves into and out of llama.cpp's cells staged through slot rows move the oracle's bytes, and broken slot rows are caught", "[emit][kernels]") {
  // Between the legacy cache and llama.cpp's transposed V (emit/slot_stage.hpp), where all 64 tokens are
  // moved: into the cells, each block's 32 or 16 dims x 16 tokens go into their tokens' slot rows, which
  // are then transposed into the target rows; out of them, the source rows are transposed into the slot
  // rows and each block's tokens' rows then into its dims. With 37 tokens the nest goes element by
  // element. Streaming is forced. Controls, caught where the rows are staged: two tokens' slots swapped,
  // half the cells never moved between the slot rows and the cells' rows, and the last block never moved
  // (into the cells, its tokens' cells then get whatever the buffer held: what a cell no token fills would
  // get, were the staged way taken with a token not moved).
  for (const auto& [source, target] : {std::pair<std::string, std::string>{"vllm-paged-legacy", "llamacpp-vtrans"}, {"llamacpp-vtrans", "vllm-paged-legacy"}})
    for (const std::int64_t head_size : {std::int64_t{32}, std::int64_t{16}}) {
      INFO(source << " -> " << target << ", head_size " << head_size);
      const StreamingPair pair = streaming_pair(source, target, {{"head_size", head_size}}, "slot_rows");
      const std::string code = emit::emit_kernel(pair.proof, pair.options);
      REQUIRE(code.find("through slot rows of " + std::to_string(head_size) + " dims") != std::string::npos);
      std::vector<std::string> sources{code};
      sources.push_back(broken_kernel(pair.proof, pair.options, "slots_swapped", "kv_slot_at[static_cast<size_t>(kv_block * INT64_C(16) + k)]",
                                      "kv_slot_at[static_cast<size_t>(kv_block * INT64_C(16) + (k ^ 1))]"));
      sources.push_back(broken_kernel(pair.proof, pair.options, "half_the_cells", "kv_cell < INT64_C(64); kv_cell += 32", "kv_cell < INT64_C(32); kv_cell += 32"));
      sources.push_back(broken_kernel(pair.proof, pair.options, "last_block_unmoved", "kv_block < INT64_C(4); ++kv_block)", "kv_block < INT64_C(3); ++kv_block)"));
      test::TempDir dir;
      test::KernelLibrary library(sources, dir.path().string());
      auto when_whole = [](std::int64_t n, int) { return n == 64; };
      check_exact_with_controls(library, pair.source, pair.target, pair.options.name,
                                {{"slots_swapped", when_whole}, {"half_the_cells", when_whole}, {"last_block_unmoved", when_whole}});
    }
  // Not on the small cache's 67 tokens: not a multiple of 32 cells, nor whole 16-token blocks.
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  const auto small = spec::load_cache(catalog.find_cache("small").string());
  const auto legacy = spec::load_layout(catalog.find_layout("vllm-paged-legacy").string());
  const auto cells = spec::load_layout(catalog.find_layout("llamacpp-vtrans").string());
  emit::EmitOptions o;
  o.name = "no_slot_rows";
  CHECK(emit::emit_kernel(prove::prove(legacy, cells, small), o).find("through slot rows") == std::string::npos);
  CHECK(emit::emit_kernel(prove::prove(cells, legacy, small), o).find("through slot rows") == std::string::npos);
}

TEST_CASE("boxes read in four quarters move the oracle's bytes, and a broken quarter or box check is caught", "[emit][kernels]") {
  // Where the plan walks a block in the source's order, a 16 KiB block (16 slots of 4 heads of 128 bf16)
  // is read as four quarters at once and its 256-byte runs streamed straight out (emit/source_box.hpp).
  // Streaming is forced; with 37 tokens the third block is cut and goes run by run. Controls: every
  // quarter reading the first one's slots, and the whole-box check dropped (the cut block copied whole,
  // writing positions no moved token holds).
  for (const auto& [source_name, target_name] : {std::pair<std::string, std::string>{"vllm-flash-nhd", "vllm-flash-hnd"}, {"flashinfer-hnd", "vllm-flash-nhd"}}) {
    INFO(source_name << " -> " << target_name);
    test::TempDir dir;
    const StreamingPair pair = streaming_pair(source_name, target_name, {{"head_size", 128}}, "quartered");
    const auto &S = pair.source, &T = pair.target;
    const prove::Proof& proof = pair.proof;
    const emit::EmitOptions& o = pair.options;
    const std::string code = emit::emit_kernel(proof, o);
    const std::string comment = "// The box read in the source's order, four quarters at once (source_box.hpp).";
    const std::size_t at = code.find(comment);
    REQUIRE(at != std::string::npos);
    // The quarter's step and the box check as this kernel prints them: "const int64_t <slot> = kv_quarter * " and
    // "if (stream && " right after the comment.
    const std::size_t step = code.find("= kv_quarter * ", at);
    REQUIRE(step != std::string::npos);
    const std::string quarter = code.substr(code.rfind("const int64_t ", step), step - code.rfind("const int64_t ", step)) + "= kv_quarter * ";
    const std::string check = comment + code.substr(at + comment.size(), code.find("if (stream && ", at) - at - comment.size()) + "if (stream && ";
    test::KernelLibrary library({code, broken_kernel(proof, o, "quartered_one_quarter", quarter, quarter + "0 * "),
                                 broken_kernel(proof, o, "quartered_unchecked", check, comment + "\nif (stream || ")},
                                dir.path().string());
    check_exact_with_controls(library, S, T, o.name,
                              {{"quartered_one_quarter", [](std::int64_t, int) { return true; }},
                               {"quartered_unchecked", [](std::int64_t n, int) { return n == 37; }}});
  }
}

TEST_CASE("boxes a longer sequential span continues are read box after box, not in quarters, and move the oracle's bytes", "[emit][kernels]") {
  // vLLM 0.3.3's MLA BLNHC block holds its layers' 16 latent rows (18 KiB each) one after another; walked
  // in the source's order into SGLang's MLA page_first pool, a layer's box is one piece of the block's span
  // (source_box.cpp, continued_in_source): no quarters. Five layers (four boxes or more, and, as DeepSeek's
  // 61, no multiple of four: with one, the block's whole span is the box, read in quarters), 64 and 37
  // tokens. Control: each latent copied 64 bytes short, caught everywhere.
  const StreamingPair pair = streaming_pair("vllm033-mla-blnhc", "sglang0523-host-mla-page-first", {{"num_layers", 5}}, "continued_box");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  CHECK(code.find("four quarters at once") == std::string::npos);
  REQUIRE(code.find("if (stream) kv_stream_copy<1152>(") != std::string::npos);
  check_edits_caught_everywhere(pair, code, {{"continued_box_short", "if (stream) kv_stream_copy<1152>(", "if (stream) kv_stream_copy<1088>("}});
}

TEST_CASE("a nest with a second loop order moves the oracle's bytes in either order, where the CPU picks it", "[emit][kernels]") {
  // Six pairs, five into and out of SGLang's host pools (a token's 32 layers together), each printing its nest again in a
  // second order (Cell::cpu_loops), taken where its choice is on (AMD's default):
  //  - from Dynamo's cross-layer blocks into the page_head pool: the target's order reads one stream per layer, which
  //    kMostReadStreams counts as few, so the plan keeps it and prints the source's order beside it
  //    (CpuOrder::by_source, KVLAYOUT_SOURCE_ORDER);
  //  - from vLLM's per-layer NHD cache into the page_head pool: the source's order reads the layers one after another, each
  //    256-byte run written alone, so the plan prints beside it the layers walked four at a time, innermost
  //    (CpuOrder::instance_groups, KVLAYOUT_INSTANCE_GROUPS);
  //  - from vLLM's per-layer NHD cache into the page_first pool: the target's order reads one stream per
  //    layer, so the plan prints beside it the layers in groups of four, the group outermost
  //    (CpuOrder::instance_groups);
  //  - from vLLM's per-layer HND cache into the page_head pool: the target's order reads one stream of 256-byte
  //    runs per layer, where the source's order would be printed beside it, the layers in groups of four
  //    take its place (CpuOrder::read_streams_in_groups, on every CPU by default);
  //  - out of the page_first pool (K half, then V half) into vLLM's packed NHD rows (a head's K next to
  //    its V): the source's order takes the halves outermost, so the plan prints beside it the halves
  //    innermost, each row written whole (CpuOrder::interleaved_rows, KVLAYOUT_INTERLEAVED_ROWS);
  //  - and out of FlashInfer's NHD pages (a page's K, then its V) into LMCache's t2d rows (a token's K row
  //    next to its V row): the same order, from inside the outer loops (layer, page), for runs of 2 KiB.
  // Both nests move the oracle's bytes, with a page of 64 tokens whole and cut at 37. Control: the second
  // nest skipping its first flattened step, caught exactly where it is taken.
  // (The page_first pool's runs are a token's heads: 8 heads of 64 dims, 1 KiB, longer than the source's
  // order beside the target's is kept for, kLongestRunBySourceOnAmd.)
  struct Case {
    std::string source, target, choice, suffix;
    std::int64_t heads, head_size;
    std::int64_t layers = 32;  // the host pools' order turns on their 32 layers; FlashInfer's pages do not
  };
  for (const Case& c : {Case{"dynamo-universal", "sglang-host-page-head", "kv_reads_by_source", "_by_source", 2, 128},
                        Case{"vllm-flash-nhd", "sglang-host-page-head", "kv_instance_groups", "_in_groups", 2, 128},
                        Case{"vllm-flash-nhd", "sglang-host-page-first", "kv_instance_groups", "_in_groups", 8, 64},
                        Case{"vllm-flash-hnd", "sglang-host-page-head", "kv_read_streams_in_groups", "_in_groups", 2, 128},
                        Case{"sglang-host-page-first", "vllm-packed-nhd", "kv_interleaved_rows", "_interleaved_rows", 2, 128},
                        Case{"flashinfer-nhd", "lmcache056-t2d", "kv_interleaved_rows", "_interleaved_rows", 8, 128, 2}}) {
    INFO(c.source << " -> " << c.target);
    test::TempDir dir;
    const StreamingPair pair =
        streaming_pair(c.source, c.target, {{"num_layers", c.layers}, {"num_kv_heads", c.heads}, {"head_size", c.head_size}}, "second_order");
    const std::string code = emit::emit_kernel(pair.proof, pair.options);
    const std::string nest = "static void cell0" + c.suffix + "(";
    REQUIRE(code.find(nest) != std::string::npos);
    REQUIRE(code.find(c.choice + ".load(std::memory_order_relaxed) ? cell0" + c.suffix + " : ") != std::string::npos);
    emit::EmitOptions skips = pair.options;
    skips.name = "second_order_skips";
    std::string broken = emit::emit_kernel(pair.proof, skips);
    std::size_t skipped = 0;
    const std::string step = "for (int64_t flat = begin; flat < end; ++flat) {";
    for (std::size_t at = broken.find(nest); at != std::string::npos; at = broken.find(nest, at + 1), ++skipped) {
      const std::size_t loop = broken.find(step, at);
      REQUIRE(loop != std::string::npos);
      broken.insert(loop + step.size(), "\n    if (flat == begin) continue;");
    }
    REQUIRE(skipped == 2);  // both instruction-set variants
    test::KernelLibrary library({code, broken}, dir.path().string());
    check_caught_where_taken(library, "second_order", "second_order_skips", pair, "second order");
  }
}

TEST_CASE("whole blocks copied four at a time move the oracle's bytes, and swapped, unflushed or half-staggered blocks are caught", "[emit][kernels]") {
  // A whole block of up to two pages (4 KiB: 16 slots of one head's 128 bf16; 8 KiB: 16 slots of one
  // head's K and V in vLLM 0.33's packed pages) is left pending and every fourth one copies the four at
  // once; the cell copies what is left as it returns (emit/cpu.cpp, whole_blocks_at_once). Streaming is forced. Controls: the four-block copy reading
  // each pair of blocks swapped (caught on one thread: with one layer the flattened loops are the head and
  // the block, so three threads' parts may hold fewer than four blocks), and the last pending blocks never
  // copied (caught where a part leaves some pending: one layer of two heads, 53 tokens, three whole blocks a
  // head). Blocks of more than two pages stay one copy of several page streams: the SixteenKibRuns tests.
  struct Case {
    std::string source, target;
    int block_bytes;
  };
  for (const Case& c : {Case{"hf-dynamic", "vllm-flash-hnd", 4096}, Case{"vllm-flash-hnd", "hf-dynamic", 4096},
                        Case{"vllm033-lhbnc", "vllm033-lbhnc", 8192}}) {
    INFO(c.source << " -> " << c.target);
    test::TempDir dir;
    const StreamingPair pair = streaming_pair(c.source, c.target, {{"head_size", 128}, {"num_layers", 1}, {"num_kv_heads", 2}}, "four_blocks");
    const auto &S = pair.source, &T = pair.target;
    const prove::Proof& proof = pair.proof;
    const emit::EmitOptions& o = pair.options;
    const std::string code = emit::emit_kernel(proof, o);
    const std::string size = std::to_string(c.block_bytes);
    REQUIRE(code.find("kv_stream_copy4<" + size + ">(kv_block_to, kv_block_from)") != std::string::npos);
    test::KernelLibrary library({code, broken_kernel(proof, o, "four_blocks_swapped", "reinterpret_cast<const __m128i*>(from[s] + at + k)",
                                                                "reinterpret_cast<const __m128i*>(from[s ^ 1] + at + k)"),
                                 broken_kernel(proof, o, "four_blocks_unflushed", "for (int b = 0; b < kv_blocks; ++b) kv_stream_copy<" + size + ">(",
                                               "for (int b = 0; b < 0; ++b) kv_stream_copy<" + size + ">("),
                                 // The stagger wrapping within half a block: each block's second half is never copied.
                                 broken_kernel(proof, o, "four_blocks_half_stagger", "return (line + s * kv_page_stagger) % SPAN;",
                                               "return (line + s * kv_page_stagger) % (SPAN / 2);")},
                                dir.path().string());
    check_exact_with_controls(library, S, T, o.name,
                              {{"four_blocks_swapped", [](std::int64_t, int threads) { return threads == 1; }},
                               {"four_blocks_unflushed", [](std::int64_t n, int) { return n == 53; }},
                               {"four_blocks_half_stagger", [](std::int64_t, int threads) { return threads == 1; }}},
                              {64, 37, 53}, std::nullopt, true);
  }
}

TEST_CASE("whole blocks under two pages copied one at a time where the CPU picks it move the oracle's bytes, and swapped ones are caught",
          "[emit][kernels]") {
  // The same pending blocks with KVLAYOUT_BLOCKS_AT_ONCE=off (kv_blocks_at_once: AMD CPUs with AVX-512):
  // kv_stream_copy4 copies each of blocks under two pages with one kv_stream_copy. Control: that copy
  // reading each pair of blocks swapped, caught on one thread for 4 KiB blocks; 8 KiB blocks never take
  // it (they stay four at a time), so there the control kernel is exact.
  struct Case {
    std::string source, target;
    bool one_at_a_time;  // the blocks are under two pages
  };
  for (const Case& c : {Case{"hf-dynamic", "vllm-flash-hnd", true}, Case{"vllm-flash-hnd", "hf-dynamic", true},
                        Case{"vllm033-lhbnc", "vllm033-lbhnc", false}}) {
    INFO(c.source << " -> " << c.target);
    test::TempDir dir;
    const StreamingPair pair = streaming_pair(c.source, c.target, {{"head_size", 128}, {"num_layers", 1}, {"num_kv_heads", 2}}, "blocks_one_at_a_time");
    const std::string code = emit::emit_kernel(pair.proof, pair.options);
    REQUIRE(code.find("kv_stream_copy4<") != std::string::npos);
    test::KernelLibrary library({code, broken_kernel(pair.proof, pair.options, "blocks_one_at_a_time_swapped",
                                                     "for (int s = 0; s < 4; ++s) kv_stream_copy<BYTES>(to[s], from[s]);",
                                                     "for (int s = 0; s < 4; ++s) kv_stream_copy<BYTES>(to[s], from[s ^ 1]);")},
                                dir.path().string());
    const bool one_at_a_time = c.one_at_a_time;
    check_exact_with_controls(library, pair.source, pair.target, pair.options.name,
                              {{"blocks_one_at_a_time_swapped", [one_at_a_time](std::int64_t, int threads) { return one_at_a_time && threads == 1; }}},
                              {64, 37, 53}, std::nullopt, false);
    if (!one_at_a_time)
      for (const std::string& variant : test::isa_variants()) {
        test::ScopedIsa isa(variant, variant != "baseline", variant != "baseline", false);
        INFO(variant << " variant: two-page blocks stay four at a time");
        const test::KernelRun run = test::run_against_oracle(library.find("blocks_one_at_a_time_swapped"), pair.source, pair.target, 0, 64, 1);
        CHECK(run.code == 0);
        CHECK(run.wrong_bytes == 0);
      }
  }
}

TEST_CASE("a paged source's whole blocks walked in the order of their table entries move the oracle's bytes, and a broken order is caught where it is taken",
          "[emit][kernels]") {
  // vLLM's NHD cache into LMCache's two-tier objects with 8 heads of 128 dims: each block of 16 tokens is
  // one 32 KiB run, copied whole; where the call picks it (KVLAYOUT_BLOCK_ORDER, emit/cpu.cpp's
  // block_order) the blocks go in the order of their table entries, each as one forward stream. Both
  // ways move the oracle's bytes, with every block whole (64 tokens) and the last cut (37). Control: the
  // order with every index set to block 0, caught exactly where the order is taken.
  test::TempDir dir;
  const StreamingPair pair = streaming_pair("vllm-flash-nhd", "lmcache-2ltd", {{"num_layers", 2}, {"num_kv_heads", 8}, {"head_size", 128}}, "block_order");
  const std::string code = emit::emit_kernel(pair.proof, pair.options);
  REQUIRE(code.find("const bool kv_by_blocks = subs == 1 && kv_blocks_in_order.load(std::memory_order_relaxed);") != std::string::npos);
  REQUIRE(code.find("kv_stream_copy<32768>(") != std::string::npos);
  REQUIRE(code.find(", !kv_by_blocks);") != std::string::npos);
  emit::EmitOptions zeros = pair.options;
  zeros.name = "block_order_zeros";
  std::string broken = emit::emit_kernel(pair.proof, zeros);
  const std::string identity = "kv_order[kv_b] = static_cast<int32_t>(kv_b);";
  std::size_t replaced = 0;
  for (std::size_t at = broken.find(identity); at != std::string::npos; at = broken.find(identity, at + 1), ++replaced)
    broken.replace(at, identity.size(), "kv_order[kv_b] = 0;");
  REQUIRE(replaced >= 2);  // both instruction-set variants
  test::KernelLibrary library({code, broken}, dir.path().string());
  check_caught_where_taken(library, "block_order", "block_order_zeros", pair, "block order");
}

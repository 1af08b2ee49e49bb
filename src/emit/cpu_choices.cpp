#include "emit/cpu_choices.hpp"

#include <algorithm>
#include <stdexcept>

namespace kvlayout::emit {
namespace {

// The generated kernel's classes and the environment's override, which every choice calls.
const char* kChoiceClasses = R"KV(// A choice that measured differently by CPU: `amd_avx2` on AMD CPUs without AVX-512 (measured on an EPYC of
// Zen 3), `amd_avx512` on AMD CPUs with AVX-512 F (measured on an EPYC of Zen 4, family 25 model 17), and
// `elsewhere` on any other CPU (measured on Intel Xeons; also off x86), unless the environment's `name`
// says on or off (the tests run the kernels both ways against the byte oracle). AVX-512 is what tells
// the two AMD classes apart because it is what a call can test portably (GCC 12 knows no "znver4"); Zen 5,
// which also has it, is not measured. Each choice below says what was measured on each class; its Zen 4
// figures, unless it says otherwise, are of `kvlayout_bench_sweep --ab` with the choice flipped over
// exactly the kernels that carry it (256 MiB, two processes of 5 interleaved repetitions, 1 / 2 threads).
// The environment's `name` as a forced choice: 1 for "on", 0 for "off", -1 otherwise (unset included).
[[maybe_unused]] static inline int kv_forced_choice(const char* name) {
  const char* forced = std::getenv(name);
  if (forced != nullptr && std::strcmp(forced, "off") == 0) return 0;
  if (forced != nullptr && std::strcmp(forced, "on") == 0) return 1;
  return -1;
}
[[maybe_unused]] static inline bool kv_cpu_choice(const char* name, bool amd_avx2, bool amd_avx512, bool elsewhere) {
  if (const int forced = kv_forced_choice(name); forced >= 0) return forced == 1;
#if KV_X86_DISPATCH
  if (!__builtin_cpu_is("amd")) return elsewhere;
  return __builtin_cpu_supports("avx512f") ? amd_avx512 : amd_avx2;
#else
  (void)amd_avx2;
  (void)amd_avx512;
  return elsewhere;
#endif
}

// A run's prefetch is long (kv_long_prefetches) from this many bytes, short (kv_short_prefetches) below.
constexpr int64_t kv_long_prefetch_bytes = 1024;
)KV";

const char* bool_text(bool value) { return value ? "true" : "false"; }

// `text`'s lines, each behind "// ".
std::string as_comment(const std::string& text) {
  std::string out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    out += "// " + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  return out;
}

std::string wanted_function(const CpuChoice& c) {
  const std::string name = std::string("kv_") + c.flag + "_wanted()";
  const std::string by_class = std::string("kv_cpu_choice(\"") + c.variable + "\", " + bool_text(c.amd_avx2) + ", " +
                               bool_text(c.amd_avx512) + ", " + bool_text(c.elsewhere) + ")";
  if (!c.model_exception) return "[[maybe_unused]] static inline bool " + name + " { return " + by_class + "; }\n";
  return "[[maybe_unused]] static inline bool " + name + " {\n#if KV_X86_DISPATCH\n  if (kv_forced_choice(\"" + c.variable +
         "\") < 0 && __builtin_cpu_is(\"" + c.model_exception->model + "\")) return " + bool_text(c.model_exception->value) +
         ";\n#endif\n  return " + by_class + ";\n}\n";
}

}  // namespace

const std::vector<CpuChoice>& cpu_choices() {
  static const std::vector<CpuChoice> choices = {
    {.flag = "long_prefetches",
     .variable = "KVLAYOUT_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "every long prefetch",
     .why = R"(Whether a call prefetches long spans of its runs (kv_prefetch_run of kv_long_prefetch_bytes or more: a
run's first 1-4 KiB; tiles prefetch theirs everywhere): not on AMD CPUs, nor where the environment says
KVLAYOUT_PREFETCH=off (=on forces them; the tests run the kernels both ways against the byte oracle).
Shorter spans (a 256-byte run, a line of a tile's rows) are prefetched everywhere. Measured on an Intel
Xeon, where long spans pay (vllm-flash-nhd -> sglang-mha 0.74x -> 0.91x of memcpy: see kv_prefetch's
note); on an AMD EPYC (Zen 3, KVM), 256 MiB, one process, two runs, 1 / 2 threads, with no prefetch at
all: sglang-host-page-first-direct -> sglang-host-page-first (2 KiB runs) 0.61-0.67x / 0.75-0.85x ->
0.79-0.86x / 0.92-0.94x, vllm-flash-nhd -> sglang-mha 0.76-0.79 / 0.87-0.96 -> 0.85 / 0.89-0.93,
vllm033-lbhnc -> vllm033-bhlnc (8 KiB runs) 0.64-0.72 / 0.67-0.73 -> 0.76-0.87 / 1.00-1.03; but
256-byte runs lost (sglang-host-page-first -> vllm033-blhnc 0.71-0.82 / 0.79 -> 0.39-0.51 / 0.49-0.70), so
those keep theirs. The threshold was 2 KiB until deepseek-v3's MLA rows (1152-byte runs) were measured
without their prefetch on the AMD, three runs each (medians, 1 / 2 threads): vllm-mla -> sglang-mla 0.71x
/ 0.71x -> 0.75x / 0.86x, vllm033-mla-lbnhc -> sglang-mla 0.71 / 0.74 -> 0.74 / 0.79, two runs:
lmcache056-mla-layerwise -> sglang0523-host-mla-page-first 0.68-0.78 / 0.62-0.70 -> 0.79-0.93 /
0.69-0.95, sglang0523-host-mla-page-first -> its -direct 0.79-0.89 / 0.92-0.93 -> 0.84-0.97 / 0.90-0.99;
lmcache-mla -> sglang-mla alone unchanged (0.83 / 0.84 -> 0.81 / 0.85). Runs of 512 bytes, unmeasured,
keep theirs. On the Zen 4 (as kv_cpu_choice says):
over 16 kernels of runs of 256 B or more, prefetched against not 1.02x / 0.99x and 1.02x / 1.03x at
median, the pairs under 0.8x gaining (lmcache056-mla-layerwise -> sglang0523-host-mla-page-first, 0.73x /
0.72x of memcpy, 1.16-1.30x / 1.14-1.27x as fast prefetched; sglang-host-page-first-direct ->
sglang-host-page-first, 0.75 / 0.87, 1.20-1.22x / 1.15-1.25x; vllm-mla -> sglang-mla 1.15-1.20x /
1.15-1.43x) and pairs above memcpy losing (lmcache-mla -> sglang-mla, 1.10x of memcpy, 0.83-0.85x /
0.93-0.95x as fast; lmcache-2ltd -> sglang-mha, 1.10x, 0.87-0.89x / 0.88-1.04x): on there, as on Intel.)"},
    {.flag = "short_prefetches",
     .variable = "KVLAYOUT_SHORT_PREFETCH",
     .amd_avx2 = true,
     .amd_avx512 = true,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "every short prefetch of a run",
     .why = R"(Whether a call prefetches the shorter spans of its runs (kv_prefetch_run under kv_long_prefetch_bytes:
a 256-byte run, a 16-byte pack's line): everywhere unless the environment says
KVLAYOUT_SHORT_PREFETCH=off (the tests run the kernels both ways against the byte oracle). Measured on an
Ice Lake-class Xeon, `kvlayout_bench_sweep --ab KVLAYOUT_SHORT_PREFETCH=off` over 90 pairs (80 of runs of
256 B .. 2 KiB and 10 into or out of vllm-paged-legacy, 256 MiB, one process of 5 interleaved
repetitions): with them 1.01x / 1.00x as fast at median (0.90-1.12x / 0.86-1.13x), faster in 51 / 46 of
83 kernels; the same kernel measured 1.15x as fast without them in another process, so no CPU is set off.)"},
    {.flag = "staged_bursts",
     .variable = "KVLAYOUT_STAGE",
     .amd_avx2 = true,
     .amd_avx512 = false,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::staged,
     .read_by = "the tiles with a staged alternative",
     .why = R"(Whether a call writes the target rows of gathered-row tiles that have a staged alternative (whole lines
on both sides, e.g. llama.cpp's transposed V, into it or out of it) in staged bursts of 256 elements
rather than a line per block: on AMD CPUs, or where the environment says KVLAYOUT_STAGE=on (=off forces
the lines; the tests run the kernels both ways against the byte oracle). Measured on an AMD EPYC: see
has_staged_bursts in kvlayout's emit/cpu.cpp. On an Intel Xeon the rows read whole and written a line
per block were the faster (into llamacpp-vtrans from vllm-flash-nhd 0.75x of memcpy against 0.64-0.68x
staged; from vllm-flash-hnd, whose chunks are staged with a gather buffer, 0.62x against 0.55x), so Intel
keeps them. On the Zen 4 (as kv_cpu_choice says):
over the 39 kernels with such tiles, a line per block 1.18x / 1.18x and 1.27x / 1.18x as fast at median,
faster in 31-33 of 39 (into llamacpp-vtrans from vllm-flash-nhd 0.56x -> 0.84x of memcpy at one thread,
from lmcache-2ltd 0.59x -> 0.91x), the staged rows faster only into sparse rows, which have a choice of
their own since (kv_sparse_rows_whole_wanted): lines there, as on Intel.)"},
    {.flag = "sparse_rows_whole",
     .variable = "KVLAYOUT_SPARSE_ROWS",
     .amd_avx2 = true,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::staged,
     .read_by = "the tiles with sparse gathered target rows",
     .why = R"(Whether a call writes sparse gathered target rows (llama.cpp's V into caches whose token rows lie far
apart: SGLang's host pools, vLLM's packed pages, LMCache's packed objects) each whole before the next, or
a line per block: whole on AMD CPUs, unless the environment says KVLAYOUT_SPARSE_ROWS=on or off (the
tests run the kernels both ways against the byte oracle). Measured on an Intel Xeon, a line per block
(see sparse_rows_whole in kvlayout's emit/cpu.cpp; there once out of llamacpp-vtrans into
sglang-host-page-first 0.50x -> 0.65x of memcpy whole), and on the AMD EPYC of Zen 3, whole (both as
the staged bursts, whose choice this was). On the Zen 4 (as kv_cpu_choice says; four processes, two
with each choice flipped) the 6 kernels with such rows 1.03x / 1.00x as fast whole at median (each
kernel's median 0.98-1.16x / 0.99-1.11x): into sglang-host-page-first 1.05-1.25x / 1.02-1.14x, into
vllm033-blnhc 1.02-1.06x / 1.00-1.07x, the others within the noise (lmcache056-packed 0.94-1.04x).)"},
    {.flag = "staged_boxes",
     .variable = "KVLAYOUT_STAGE_BOXES",
     .amd_avx2 = true,
     .amd_avx512 = false,
     .elsewhere = true,
     .model_exception = ModelException{"icelake-server", false},
     .test_switch = ChoiceTestSwitch::staged,
     .read_by = "the tiles with a staged box",
     .why = R"(Whether a call stages the large boxes out of token-fastest rows (vLLM's legacy cache's blocks: its value
tiles' 16-token rows and its key block's 16-byte packs, into token-major blocks or into a slot pool's
gathered token rows: kStraightBoxBytes in kvlayout's emit/cpu.cpp), each box moved into a stack buffer
and streamed out, or streams each box's lines straight into the target: straight on Ice Lake server CPUs
(a choice by CPU model) and on AMD CPUs with AVX-512 (kv_cpu_choice's classes), staged elsewhere, unless
the environment says KVLAYOUT_STAGE_BOXES=on or off (the tests run the kernels both ways against the
byte oracle). Measured: on an AMD EPYC (Zen 3) staged 0.59-0.64x of memcpy against
straight 0.37-0.39x, on an Intel Xeon with 2 MiB of L2 per core 0.72-0.79x against 0.63-0.67x
(bench/README.md); on an Ice Lake-class Xeon (family 6 model 106, 48 KiB of L1d, 1.25 MiB of L2) the
bare patterns straight 0.73x / 0.74x at 1 / 2 threads against staged 0.65x / 0.58x, and
vllm-paged-legacy -> vllm-flash-nhd's kernel with its value boxes straight 1.06-1.14x / 1.10-1.18x as
fast (two processes of 7 interleaved repetitions); into a slot pool's rows one by one, the bare patterns
straight 0.66x / 0.71x against staged 0.51x / 0.52x for values, 0.76x / 0.78x against 0.54x / 0.55x
for key packs. On an AMD EPYC of Zen 4 (KVM, AVX-512; `kvlayout_bench_sweep --ab KVLAYOUT_STAGE_BOXES=off`
over every pair out of vllm-paged-legacy, 256 MiB, three processes of 5 interleaved repetitions, 1 / 2
threads) the bare patterns straight 0.87x / 0.82x against staged 0.70x / 0.75x, and the 23 kernels with
a straight box 1.04-1.05x / 1.01-1.03x as fast straight at median: into token-major blocks whose rows
abut, or slot rows placed one by one, 1.16-1.43x / 0.97-1.22x (-> vllm-flash-nhd 0.59x -> 0.78x of memcpy
at one thread, -> flashinfer-nhd 0.57 -> 0.75, -> sglang-mha 0.61 -> 0.75, -> lmcache056-2td 0.58 ->
0.78); into rows 4 KiB apart that interleave K and V (the key packs of -> lmcache056-t2d, -packed,
vllm-packed-nhd, vllm033-lbnhc, at 0.83-0.87x staged) 0.86-1.00x / 0.79-0.96x: straight there, where the
pairs it slows are the faster ones.)"},
    {.flag = "reads_by_source",
     .variable = "KVLAYOUT_SOURCE_ORDER",
     .amd_avx2 = true,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "run_part",
     .why = R"(Whether a call walks the nests kept in the target's order only because it reads a few streams while the
source's order would scatter the writes (kvlayout's plan.hpp, CpuOrder::by_source) in the source's order
instead: on AMD CPUs, or where the environment says KVLAYOUT_SOURCE_ORDER=on (=off forces the target's;
the tests run the kernels both ways against the byte oracle). The target's order was measured the
faster on an Intel Xeon (see streams_along in kvlayout's emit/plan.hpp), the source's on an AMD EPYC
for runs of 512 bytes or less (see kLongestRunBySourceOnAmd in kvlayout's emit/plan.cpp). On the Zen 4
(as kv_cpu_choice says):
the 10 kernels with such nests all faster in the source's order, 1.45-1.55x / 1.19-1.20x at median
(min 1.16x / 1.01x): the source's there too.)"},
    {.flag = "run_quads",
     .variable = "KVLAYOUT_RUN_QUADS",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "the paired runs' nests",
     .why = R"(Whether a call takes the four-by-four nests of paired 16-byte runs that go two by two elsewhere
(kvlayout's emit/run_pairs.hpp, quads_where_cpu_picks): not on AMD CPUs, where two by two was measured
the faster for some sources, unless the environment says KVLAYOUT_RUN_QUADS=on (=off forces two by two;
the tests run the kernels both ways against the byte oracle). Measured faster on an Ice Lake-class Xeon.
On the Zen 4 (as kv_cpu_choice says):
the 18 kernels with such nests four by four 1.02x / 1.02-1.04x as fast at median, faster in 13-14 of 18:
four by four there, as on Intel.)"},
    {.flag = "instance_groups",
     .variable = "KVLAYOUT_INSTANCE_GROUPS",
     .amd_avx2 = true,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "run_part",
     .why = R"(Whether a call walks the nests that move a per-layer source into a cache holding a token's layers
together (kvlayout's plan.hpp, CpuOrder::instance_groups) four layers at a time, innermost, instead of a
layer at a time (each run written alone) or every layer innermost (one read stream per layer): on AMD
CPUs, or where the environment says KVLAYOUT_INSTANCE_GROUPS=on (=off forces the plan's own order; the
tests run the kernels both ways against the byte oracle). Measured on an AMD EPYC only: see
kInstanceGroup in kvlayout's emit/plan.cpp. Other CPUs keep the plan's order (not measured there).
On the Zen 4 (as kv_cpu_choice says):
`KVLAYOUT_INSTANCE_GROUPS=off` over the 13 kernels with either kind of groups (this choice's and
kv_read_streams_in_groups's), grouped 1.22-1.28x / 1.12-1.14x as fast at median, faster in 11-12 of 13:
grouped there too.)"},
    {.flag = "read_streams_in_groups",
     .variable = "KVLAYOUT_INSTANCE_GROUPS",
     .amd_avx2 = true,
     .amd_avx512 = true,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "run_part",
     .why = R"(The same groups where they take the place of the source's order (kv_reads_by_source) beside a nest kept in
the target's order for its 17-32 read streams of runs of 512 bytes or less (kvlayout's plan.hpp,
CpuOrder::read_streams_in_groups): on every CPU, unless the environment says KVLAYOUT_INSTANCE_GROUPS=off.
Measured faster on both: an AMD EPYC (see kInstanceGroup in kvlayout's emit/plan.cpp), and an Intel Xeon,
three processes of seven repetitions, geometric means of grouped over the target's order at one / two
threads: flashinfer-hnd -> sglang-host-page-head 1.09x / 1.21x, vllm-flash-hnd 1.18 / 1.06, hf-dynamic
1.03 / 1.06 (two unchanged pairs beside them 0.97-1.05), where the other groups (instance_groups) read
0.88-1.04 / 0.83-1.06 on that Intel and stay AMD's.)"},
    {.flag = "row_prefetches",
     .variable = "KVLAYOUT_ROW_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the tiles whose rows lie far apart",
     .why = R"(Whether a call prefetches a tile's source rows row by row where they lie far apart (a block's 16 token
rows of one head, 2 KiB apart in vLLM's NHD cache; print_copy's prefetch_rows): not on AMD CPUs, nor where
the environment says KVLAYOUT_ROW_PREFETCH=off (=on forces them; the tests run the kernels both ways
against the byte oracle). Rows that abut (a head's 4 KiB page of an HND cache) are prefetched as one span
everywhere (see kv_prefetch). Measured on an AMD EPYC (Zen 3, KVM), kvlayout_bench_sweep --ab
KVLAYOUT_ROW_PREFETCH=off, 256 MiB, 5 interleaved repetitions, over every pair into or out of the
token-fastest caches: the 9 kernels with such rows, all into vllm-paged-legacy's V, ran 1.01-1.16x as
fast without them at one thread (median 1.09x; vllm-flash-nhd 0.61x -> 0.71x of memcpy,
sglang-host-page-first-direct 0.62 -> 0.71) and 1.01-1.11x at two (vllm-flash-nhd 0.72 -> 0.80), none
slower. Other CPUs keep them (not measured there). On the Zen 4 (as kv_cpu_choice says):
the same 9 kernels 1.05x / 1.05-1.06x as fast with them at median, faster in 6-7 of 9: on there.)"},
    {.flag = "blocks_at_once",
     .variable = "KVLAYOUT_BLOCKS_AT_ONCE",
     .amd_avx2 = true,
     .amd_avx512 = false,
     .elsewhere = true,
     .test_switch = ChoiceTestSwitch::blocks_at_once,
     .read_by = "kv_stream_copy4",
     .why = R"(Whether a call copies whole blocks of under two pages four at a time, a line of each in turn
(kv_stream_copy4; kvlayout's emit/cpu.cpp, whole_blocks_at_once), or one after another: four at a time
but on AMD CPUs with AVX-512, unless the environment says KVLAYOUT_BLOCKS_AT_ONCE=on or off (the tests
run the kernels both ways against the byte oracle). Blocks of two pages go four at a time everywhere.
Four at a time measured faster on an Intel Xeon and an Ice Lake-class one (see whole_blocks_at_once).
On an AMD EPYC of Zen 4 (KVM, AVX-512; 256 MiB, 1 / 2 threads): trtllm-pool -> vllm-flash-hnd's 4 KiB
blocks one at a time (`--ab-source`, 7 interleaved repetitions) 0.81x -> 1.13x of memcpy / 0.97x ->
1.25x, where four at a time in 32-byte steps read 0.80x -> 0.91x / 0.88x -> 0.93x (the sweep's replay of
such runs, one after another, 0.99-1.06x of memcpy against the kernels' 0.69-0.72x of it); `--ab
KVLAYOUT_BLOCKS_AT_ONCE=on` over the 33 distinct kernels with such blocks, two processes of 5 interleaved
repetitions, one at a time against four at a time: the 4 KiB blocks between HND pages 1.02-1.52x /
1.00-1.34x as fast (hf-dynamic -> flashinfer-hnd 1.32-1.44x / 1.29-1.31x, trtllm-pool -> dynamo-universal
1.37-1.42x / 1.23x), dynamo-universal -> hf-dynamic alone slower (0.82-0.85x / 0.92x, at 0.61x / 0.68x of
memcpy four at a time); the 8 KiB blocks of vLLM 0.33's pages 0.81-1.18x / 0.89-1.10x (median 0.93x /
1.00x), so those stay four at a time there too.)"},
    {.flag = "table_free_prefetches",
     .variable = "KVLAYOUT_TABLE_FREE_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the prefetches of those tiles and runs",
     .why = R"(Whether a call prefetches a step ahead the source of tiles and of runs shorter than a line where no
table places it (HF's per-layer HND tensors read in 4 KiB tiles, each head's page 512 KiB from the
next head's; kvlayout's emit/statements.hpp, PrefetchStep::where_cpu_picks): on AMD CPUs with AVX-512,
unless the environment says KVLAYOUT_TABLE_FREE_PREFETCH=on or off (the tests run the kernels both ways
against the byte oracle). Measured slower on an Intel Xeon when transposes took the step of runs
(kvlayout's emit/statements.cpp, prefetch_step: lmcache-2ltd -> vllm-paged-legacy 0.81x -> 0.72x of
memcpy), not on a Zen 3. On the Zen 4 (as kv_cpu_choice says) the 8 kernels with such a step, all into
vllm-paged-legacy, with it 1.06-1.08x / 1.09x as fast at median, faster in 5-6 of 6 distinct kernels:
hf-dynamic 1.44-1.46x / 1.24-1.50x (0.70x / 0.82x of memcpy with it, each head's 4 KiB page two heads
ahead), lmcache056-2td 1.08-1.09x / 1.11-1.22x, lmcache-2ltd 1.03-1.07x / 1.09-1.11x, lmcache056-t2d
and -packed 1.05-1.11x / 0.96-1.08x, llamacpp-vtrans (its K) 0.99-1.01x / 1.01-1.03x.)"},
    {.flag = "interleaved_rows",
     .variable = "KVLAYOUT_INTERLEAVED_ROWS",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "run_part",
     .why = R"(Whether a call walks the nests whose outermost loop (or, for long runs, one further in) picks runs the
target interleaves within a row (a row's K, then its V, read from a source's K and V halves: kvlayout's
plan.hpp, CpuOrder::interleaved_rows) with that loop innermost, each row written whole from two read
streams: on AMD CPUs with AVX-512, unless the environment says KVLAYOUT_INTERLEAVED_ROWS=on or off (the
tests run the kernels both ways against the byte oracle). On the Zen 4 (as kv_cpu_choice says) the 32
kernels with such nests 1.21x / 1.04-1.05x as fast at median, faster in 30 / 27-28 of 32 (kvlayout's
emit/plan.cpp, add_interleaved_rows_order); the same order from a loop further in, for 2 KiB runs a page
or more apart in the source (FlashInfer's NHD pages into LMCache's t2d rows), 1.24-1.32x / 1.17-1.21x. Not
measured on other CPUs, which keep the plan's order.)"},
    {.flag = "blocks_in_order",
     .variable = "KVLAYOUT_BLOCK_ORDER",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "the cells with such blocks",
     .why = R"(Whether a call walks a paged source's whole blocks (over two pages) in the order of their table entries,
each copied as one forward stream (kvlayout's emit/cpu.cpp, block_order), or in the logical order, each
in page streams: on AMD CPUs with AVX-512, unless the environment says KVLAYOUT_BLOCK_ORDER=on or off
(the tests run the kernels both ways against the byte oracle). Not measured on other CPUs, which keep
the logical order. On the Zen 4 (as kv_cpu_choice says) the 37 kernels with such blocks 1.17-1.19x /
1.03-1.07x as fast at median over the two groups measured (block_order), faster in 29-33 / 27-29.)"},
    {.flag = "ridden_row_prefetches",
     .variable = "KVLAYOUT_RIDDEN_ROW_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the ridden tiles",
     .why = R"(Whether a call prefetches, beside each head of a tile that K runs ride (a token row holding each head's K
beside its V, moved into llama.cpp's transposed V: kvlayout's emit/riding_runs.hpp), the next head's K and
V of the block's 32 rows (the next block's first head after the last): on AMD CPUs with AVX-512, unless
the environment says KVLAYOUT_RIDDEN_ROW_PREFETCH=on or off (the tests run the kernels both ways against
the byte oracle). On an Intel Xeon the rows read in order without prefetches were the faster (hand edits:
see fused_rows_whole in kvlayout's emit/cpu.cpp); other CPUs are not measured. On the Zen 4 (as
kv_cpu_choice says, 7 interleaved repetitions) the 4 kernels with such tiles 1.26-1.50x / 1.28-1.39x as
fast with them at median (1.22-1.61x / 1.17-1.42x), faster in all 4: 0.40-0.53x -> 0.56-0.64x of memcpy
at one thread, near the bare pattern of such rows (0.64x).)"},
    {.flag = "page_hop_prefetches",
     .variable = "KVLAYOUT_PAGE_HOP_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the copies with such a step",
     .why = R"(Whether a call prefetches a step ahead inside a paged source's blocks whose loops read a few page-long
streams that hop a page at each step (TensorRT-LLM's pool into HND-ordered pages: kvlayout's
emit/statements.cpp, prefetch_step): on AMD CPUs with AVX-512, unless the environment says
KVLAYOUT_PAGE_HOP_PREFETCH=on or off (the tests run the kernels both ways against the byte oracle). On
an Ice Lake-class Xeon a step inside such blocks (whether their streams hop or not) was no faster; other
CPUs are not measured. On the Zen 4 (as kv_cpu_choice says) the 19 kernels with such a step 1.02-1.04x /
1.07x as fast with it at median (see prefetch_step).)"},
    {.flag = "lookup_carried_prefetches",
     .variable = "KVLAYOUT_CARRIED_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the step prefetches that carry through a table lookup",
     .why = R"(Whether a call's step prefetch of a paged source, past the last iteration of a short loop over the
blocks of one larger target block (vLLM 0.3.3's 16-token blocks into TensorRT-LLM's 32-token ones), carries
into the enclosing loop's next iteration, prefetching the next block through the table; else every other
block (every fourth, into SGLang's 64-token pages) is read unprefetched (kvlayout's emit/statements.hpp,
next_displacement), where a block reads at most 8 KiB. On AMD CPUs with AVX-512, unless the environment
says KVLAYOUT_CARRIED_PREFETCH=on or off (the tests run the kernels both ways against the byte oracle).
Other CPUs are not measured. On the Zen 4 a hand edit of vllm033-lhbnc -> trtllm-pool (256-byte runs,
256 MiB, two processes of 9 interleaved repetitions) read 0.75x -> 0.84x of memcpy at one thread,
1.11-1.12x / 1.05-1.17x as fast; `--ab KVLAYOUT_CARRIED_PREFETCH=off` over the kernels it then reached (two
processes of 5): the 8 KiB blocks of vLLM 0.3.3's LHBNC cache all faster with it (1.02-1.21x /
1.00-1.30x), the 32 KiB blocks of per-layer caches not (0.86-1.08x), so those no longer carry it
(kvlayout's emit/cpu.cpp, carries_by_lookup).)"},
    {.flag = "block_passes",
     .variable = "KVLAYOUT_BLOCK_PASSES",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::second_orders,
     .read_by = "run_part, where it interleaves nests",
     .why = R"(Whether a call whose nests run in interleaved passes (a legacy key pack cell beside a value tile over a
source that interleaves K and V per head) splits each pass again, one block of the loop inside the
flattened ones at a time (kvlayout's emit/cpu.cpp, block_pass_count: where a flattened iteration reads more
than 64 KiB, or that loop's steps interleave in the source), so that each nest reads its half of a block right
after the other's: on AMD CPUs with AVX-512,
unless the environment says KVLAYOUT_BLOCK_PASSES=on or off (the tests run the kernels both ways against the
byte oracle). Other CPUs are not measured. On the Zen 4 a hand edit of vllm033-lhbnc -> vllm-paged-legacy
read 0.68x -> 0.84-0.86x of memcpy at one thread; `--ab KVLAYOUT_BLOCK_PASSES=off` (two processes of 5
interleaved repetitions) over the 11 kernels that take them (vLLM 0.3.3's LHBNC, BHLNC, BLNHC and LBNHC
caches, vLLM's packed NHD and LMCache's packed objects into the legacy cache; 0.3.3's LHBNC, BHLNC, BLHNC,
LBHNC and vLLM's packed HND into llama.cpp's transposed V): 1.05-1.27x / 0.93-1.25x as fast in block passes,
1.10x / 1.08x at median, all faster at one thread.)"},
    {.flag = "straight_box_prefetches",
     .variable = "KVLAYOUT_STRAIGHT_BOX_PREFETCH",
     .amd_avx2 = false,
     .amd_avx512 = true,
     .elsewhere = false,
     .test_switch = ChoiceTestSwitch::prefetches,
     .read_by = "the straight boxes",
     .why = R"(Whether a call that streams the large boxes out of token-fastest rows straight (kv_staged_boxes off)
prefetches the next block's same kilobyte beside each step, as the staged boxes do (or, for a key box
that no step of its nest encloses, the same kilobyte of the next layer's tensor): on AMD CPUs with
AVX-512, unless the environment says KVLAYOUT_STRAIGHT_BOX_PREFETCH=on or off (the tests run the kernels
both ways against the byte oracle). Measured on an Ice Lake-class Xeon, vllm-paged-legacy ->
vllm-flash-nhd's value boxes straight read 1.09x / 1.13x as fast as staged with the prefetch and 1.14x /
1.18x without (one process each): off there. AMD CPUs without AVX-512 stage their boxes (kv_staged_boxes),
so the choice is not theirs to take.
On the Zen 4 (as kv_cpu_choice says; `kvlayout_bench_sweep --ab KVLAYOUT_STRAIGHT_BOX_PREFETCH=off`
over the 20 distinct kernels with such a prefetch, all out of or into vllm-paged-legacy, two processes on
huge pages and two on 4 KiB pages) every kernel faster with it in every process but two ties: 1.18-1.19x
/ 1.12-1.19x as fast at median (each kernel's median 1.00-1.78x / 0.97-1.57x); -> vllm-flash-nhd 1.23-1.39x
/ 1.26-1.45x (0.94-1.02x of memcpy with it), -> sglang-mha 1.34-1.78x / 1.29-1.57x. The next layer's
kilobyte, over the 3 distinct kernels with it (-> sglang-host-page-first, vllm033-blhnc, vllm033-blnhc;
the same four processes): 0.97-1.11x / 1.03-1.28x as fast, faster in all but one.)"},
  };
  return choices;
}

std::vector<std::string> cpu_choice_variables() {
  std::vector<std::string> variables;
  for (const CpuChoice& c : cpu_choices())
    if (std::find(variables.begin(), variables.end(), c.variable) == variables.end()) variables.emplace_back(c.variable);
  return variables;
}

std::string cpu_choice_load(const std::string& flag) {
  for (const CpuChoice& c : cpu_choices())
    if (flag == c.flag) return "kv_" + flag + ".load(std::memory_order_relaxed)";
  throw std::logic_error("no per-CPU choice has the flag " + flag);
}

ChoiceTestSwitch test_switch_of(const std::string& variable) {
  for (const CpuChoice& c : cpu_choices())
    if (variable == c.variable) return c.test_switch;
  throw std::logic_error("no per-CPU choice is forced by " + variable);
}

std::string cpu_choice_declarations() { return cpu_choice_declarations(cpu_choices()); }

std::string cpu_choice_declarations(const std::vector<CpuChoice>& choices) {
  std::string out = kChoiceClasses;
  for (const CpuChoice& c : choices) {
    // Appended piece by piece: GCC 12 warns (-Wstringop-overflow, falsely) on the chained concatenation.
    for (const std::string& piece : {std::string("\n"), as_comment(c.why), wanted_function(c), std::string("// Read by "),
                                     std::string(c.read_by), std::string("; written by each call (kv_run_part) before its threads start.\n"),
                                     std::string("static std::atomic<bool> kv_"), std::string(c.flag), std::string("{"),
                                     std::string(bool_text(c.elsewhere)), std::string("};\n")})
      out += piece;
  }
  out += "\n";
  return out;
}

void print_choice_stores(CodeWriter& w) { print_choice_stores(w, cpu_choices()); }

void print_choice_stores(CodeWriter& w, const std::vector<CpuChoice>& choices) {
  for (const CpuChoice& c : choices)
    w.line(std::string("kv_") + c.flag + ".store(kv_" + c.flag + "_wanted(), std::memory_order_relaxed);");
}

}  // namespace kvlayout::emit

#!/usr/bin/env bash
# Builds kvlayout and its tests in build-asan/ with AddressSanitizer and UndefinedBehaviorSanitizer (clang,
# as scripts/fuzz.sh; benchmarks off) and runs the whole ctest suite once under them. Exits 1 if a test fails
# or any sanitizer report was written, including one from a kvlayout process that a test ran and whose
# exit code the test accepted.
#
#   scripts/sanitize.sh [CTEST ARGS...]     e.g. scripts/sanitize.sh -R prove
set -euo pipefail
cd "$(dirname "$0")/.."

# clang, not the system compiler: on CI's 2 cores clang builds this tree under both sanitizers in 715-755 s
# where GCC 12 took 1076 s (README "Fuzzing and sanitizers"). The plain suite is GCC's, so both compilers'
# warnings and code generation are still exercised.
if ! command -v clang++ >/dev/null 2>&1; then
  echo "sanitize: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
# -fno-sanitize-recover: a UBSan finding stops the process instead of printing and carrying on.
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
build_start=$SECONDS
# A build-asan/ configured with another compiler (GCC, before clang built it) is started afresh: CMake does
# not switch an existing build directory's compiler.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
# -O1 -g1: what the sanitizer documentation recommends, and it compiles markedly faster than -O2 -g on the
# 2 cores CI has; line tables are all a report's stack needs.
cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DKVLAYOUT_BENCH=OFF -DKVLAYOUT_PYTHON=OFF -DKVLAYOUT_TESTS=ON -DKVLAYOUT_CERTIFICATE_SAMPLE=32 \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  "${launcher[@]}" >/dev/null
cmake --build build-asan -j2
echo "sanitize: built in $((SECONDS - build_start)) s"

# Reports go to files, one per process, rather than to stderr: tests run the kvlayout binary and check
# its exit code and output, so a report on a child's stderr could pass unseen (ASan's exit code 1 even
# reads as kvlayout's "answered no"). Distinct exit codes make a report fail any test that checks codes.
reports=$(mktemp -d "${TMPDIR:-/tmp}/kvlayout-sanitize.XXXXXX")
trap 'rm -rf "$reports"' EXIT
# malloc_context_size=10: the allocation and free stacks a report shows keep 10 frames (30 by default); the
# unwinding and stack depot behind each malloc were a fifth of the run time of the allocation-heavy tests
# (perf, the plan checker's test). The stack of the bad access itself is whole.
export ASAN_OPTIONS="log_path=$reports/asan:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:malloc_context_size=10"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1:exitcode=87"

# What the sanitizers add nothing to is left out: the emitted kernels are compiled without them, so each
# kernel runs in the baseline variant only (its AVX2 twin is run by the plain suite), and the test of every
# shipped pair's kernel runs one pair in 16 (KVLAYOUT_TEST_PAIR_SAMPLE; the plain suite runs all); the numpy/torch peer
# comparison (Python against uninstrumented kernels) and the nvcc compile of every CUDA kernel (nvcc's work,
# not kvlayout's) are skipped unless asked for by name. The certificate is replayed on a sample of one row,
# group row and mutant in 32 (-DKVLAYOUT_CERTIFICATE_SAMPLE above): the whole replay, which the plain suite
# runs, would take most of an hour under ASan. Both samples are anti-diagonals of the layout grid, so every
# layout is still a source and a target under the sanitizers (certificate/matrix.hpp, in_sample_pair).
export KVLAYOUT_TEST_ISA_VARIANTS=baseline KVLAYOUT_TEST_PAIR_SAMPLE=16
# The differential test grades the first 100 of its 250 random pairs (each three times, each path in a child
# process, ~0.75 s a pair under ASan); the plain suite grades all 250, and prove_fuzz (scripts/fuzz.sh) proves
# fuzzed declarations under both sanitizers.
export KVLAYOUT_DIFFERENTIAL_CASES=100
args=("$@")
# The two tests of certificate check's command line (a one-character spec change, --sample's choice) each
# derive a small matrix with its mutation controls several times over, 1-4 minutes under ASan; the code they
# drive is the replay that certificate_is_up_to_date runs here under the sanitizers, so they run plain only.
if [ ${#args[@]} -eq 0 ]; then
  args=(-E '^bench_peers_agree_with_kernels$|^emitted CUDA kernels compile|^kvlayout certificate check replays a certificate|^certificate check --sample N compares')
fi
test_start=$SECONDS
rc=0
ctest --test-dir build-asan --output-on-failure -j2 "${args[@]}" || rc=$?
echo "sanitize: tests ran in $((SECONDS - test_start)) s"

# A log file may hold only a warning (e.g. about an exception thrown across a thread's stack); those are
# shown but do not fail the run.
found=0
for f in "$reports"/*; do
  [ -e "$f" ] || continue
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
    found=1
    echo "sanitize: report in $(basename "$f"):"
  else
    echo "sanitize: warning in $(basename "$f") (not a failure):"
  fi
  sed 's/^/  /' "$f" | head -n 60
done

if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
  echo "sanitize: FAILED (ctest exit $rc, sanitizer reports: $([ "$found" -ne 0 ] && echo yes || echo none))"
  exit 1
fi
echo "sanitize: every test passed under ASan+UBSan with no report"

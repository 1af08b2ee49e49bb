#!/usr/bin/env bash
# Builds the libFuzzer harnesses in fuzz/ (clang, ASan+UBSan) in build-fuzz/ and runs each for SECONDS
# (default 60) from a copy of the seed corpus. Exits 1 if any harness found a crash, a sanitizer report, an
# escaped non-SpecError exception (the CLI's exit 4), a false EXACT, a timeout or an out-of-memory.
#
#   scripts/fuzz.sh [SECONDS]
#
# Crashing inputs are kept in build-fuzz/artifacts/HARNESS/, logs in build-fuzz/logs/; replay one with
# build-fuzz/fuzz/HARNESS_fuzz FILE. See fuzz/README.md for longer and parallel runs.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
# A fixed seed by default, so that a CI run explores the same inputs each time (a finding fails CI
# reproducibly, never by chance); FUZZ_SEED=0 lets libFuzzer pick one, any other value picks that seed.
seed=${FUZZ_SEED:-1}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS]   (a positive number of seconds per harness; default 60)" >&2
  exit 2
fi
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi

# ccache only if present: CI and new users need not have it.
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
build_start=$SECONDS
# -O1 -g1 as in scripts/sanitize.sh: the sanitizer documentation's advice, and a faster build on CI's 2 cores.
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DKVLAYOUT_FUZZ=ON -DKVLAYOUT_TESTS=OFF -DKVLAYOUT_BENCH=OFF -DKVLAYOUT_PYTHON=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz --target kvlayout_fuzzers -j2
echo "fuzz: built in $((SECONDS - build_start)) s"

# Corpora are copies (libFuzzer adds to them), and the harnesses' temp files ($TMPDIR) go there too, so the
# repository is never written to.
work=$(mktemp -d "${TMPDIR:-/tmp}/kvlayout-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/corpus/{expr_parse,spec_load,prove,check_input} "$work/tmp"
python3 fuzz/expr_seeds.py specs "$work/corpus/expr_parse" >/dev/null
cp specs/engines/*.json specs/controls/*.json specs/caches/*.json "$work/corpus/spec_load/"
cp specs/engines/*.json specs/controls/*.json "$work/corpus/prove/"
python3 fuzz/check_seeds.py . "$work/corpus/check_input" >/dev/null

# A UBSan report already aborts (-fno-sanitize-recover); ask for its stack too.
export UBSAN_OPTIONS=print_stacktrace=1
harnesses=(expr_parse spec_load prove check_input)
# Each harness is one process on one core: as many run at once as there are cores (FUZZ_PARALLEL to change),
# each still for SECONDS, so the campaign is the same and takes half the time on CI's 2 cores.
parallel=${FUZZ_PARALLEL:-$(nproc 2>/dev/null || echo 1)}
run_harness() {
  local harness=$1 artifacts=build-fuzz/artifacts/$1 log=build-fuzz/logs/$1.log rc=0
  rm -rf "$artifacts" && mkdir -p "$artifacts" "$(dirname "$log")"  # this run's findings only
  TMPDIR="$work/tmp" "build-fuzz/fuzz/${harness}_fuzz" -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
    -dict=fuzz/kvlayout.dict -artifact_prefix="$artifacts/" -print_final_stats=1 "$work/corpus/$harness" \
    >"$log" 2>&1 || rc=$?
  echo "$rc" > "$work/$harness.rc"
}
running=0
for harness in "${harnesses[@]}"; do
  if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$((running - 1)); fi
  run_harness "$harness" &
  running=$((running + 1))
done
wait || true

failed=()
for harness in "${harnesses[@]}"; do
  artifacts=build-fuzz/artifacts/$harness
  log=build-fuzz/logs/$harness.log
  rc=$(cat "$work/$harness.rc" 2>/dev/null || echo 1)
  # Final stats are printed on a clean finish; after a crash the last status line has the count.
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if [ -z "$runs" ]; then runs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true); fi
  # libFuzzer exits non-zero on a crash, timeout or OOM; the grep catches a report that did not stop it.
  report='^==kvlayout-fuzz==|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:'
  if [ "$rc" -ne 0 ] || grep -qE "$report" "$log"; then
    failed+=("$harness")
    echo "fuzz: $harness FAILED after ${runs:-?} executions (${rate:-?}/s), exit $rc; log $log, input in $artifacts/:"
    # The report and the stack frames of kvlayout's own code (libFuzzer's and libc's left out).
    grep -E '^==kvlayout-fuzz==|ERROR:|runtime error:|SUMMARY:|^ +#[0-9]+ |Test unit written' "$log" |
      grep -vE 'fuzzer::|__sanitizer|libc\.so|libc-start|libc_start|nptl|abort\.c|raise\.c| in main | in _start ' |
      head -n 24 | sed 's/^/  /' || true
  else
    echo "fuzz: $harness ok: ${runs:-?} executions in $seconds s (${rate:-?}/s)"
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: all harnesses ran $seconds s without a finding"

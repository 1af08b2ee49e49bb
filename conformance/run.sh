#!/usr/bin/env bash
# The conformance suite: builds (or reuses) its virtual environment with the pinned engine packages, then
# runs each engine's test (conformance/test_ENGINE.py) with that engine's packages (VENV/engines/ENGINE, see
# setup.sh) against the declarations in specs/, with the kvlayout built in build/; then the suite's own
# checks (conformance/test_suite.py).
#
#   conformance/run.sh [ENGINE...]      e.g. conformance/run.sh vllm hf   (default: every engine)
#
# Needs build/kvlayout (cmake --build build), or KVLAYOUT_CLI naming another. Exit: 0 all passed; 1 a test
# failed; 2 bad input (no kvlayout, an unknown engine).
set -euo pipefail
cd "$(dirname "$0")/.."

export KVLAYOUT_CLI=${KVLAYOUT_CLI:-$PWD/build/kvlayout}
if [ ! -x "$KVLAYOUT_CLI" ]; then
  echo "conformance: no kvlayout at $KVLAYOUT_CLI (build it: cmake -S . -B build && cmake --build build -j2)" >&2
  exit 2
fi
engines=("$@")
if [ ${#engines[@]} -eq 0 ]; then
  for f in conformance/requirements/*.txt; do
    e=$(basename "$f" .txt)
    [ "$e" = base ] || engines+=("$e")
  done
fi
for e in "${engines[@]}"; do
  if [ ! -f "conformance/requirements/$e.txt" ] || [ ! -f "conformance/test_$e.py" ]; then
    echo "conformance: unknown engine \"$e\" (engines: $(ls conformance/requirements | sed -n 's/\.txt$//p' | grep -v '^base$' | tr '\n' ' '))" >&2
    exit 2
  fi
done

start=$SECONDS
python=$(conformance/setup.sh)
venv=$(dirname "$(dirname "$python")")
# Engines read these at import; none of them may reach a network or a GPU here.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 CUDA_VISIBLE_DEVICES="" TOKENIZERS_PARALLELISM=false
failed=()
for e in "${engines[@]}"; do
  t0=$SECONDS
  rc=0
  PYTHONPATH="$venv/engines/$e:$PWD/conformance" "$python" -m pytest -q -p no:cacheprovider "conformance/test_$e.py" || rc=$?
  echo "conformance: $e: $([ $rc -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - t0)) s" >&2
  [ $rc -eq 0 ] || failed+=("$e")
done
rc=0
PYTHONPATH="$PWD/conformance" "$python" -m pytest -q -p no:cacheprovider conformance/test_suite.py || rc=$?
[ $rc -eq 0 ] || failed+=("suite")
echo "conformance: $((SECONDS - start)) s in all" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "conformance: every observed declaration agrees with its engine's own code" >&2

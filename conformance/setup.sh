#!/usr/bin/env bash
# Creates the conformance suite's virtual environment, or reuses it when nothing it was built from changed:
#   1. requirements/base.txt into the venv, with its dependencies (torch, numpy, pytest): shared by all;
#   2. each other requirements/ENGINE.txt with --no-deps into its own directory, VENV/engines/ENGINE, which
#      run.sh puts on PYTHONPATH for conformance/test_ENGINE.py only. Engines pin one another's packages
#      differently (SGLang 0.5.23 pins transformers==5.19.0 and openai==2.8.0, vLLM 0.33.0 needs openai>=2.25),
#      as real deployments do; one directory each keeps every engine on its own pins and torch installed once.
#      Each file holds the engine's pinned package and only the modules its layout code imports.
# Prints the environment's python. pip's cache (~/.cache/pip) makes a rebuild mostly local.
#
#   conformance/setup.sh          (venv in $KVLAYOUT_CONFORMANCE_VENV, default build/conformance-venv)
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${KVLAYOUT_CONFORMANCE_VENV:-build/conformance-venv}
python=${PYTHON:-python3}
stamp_want=$({ "$python" --version; cat conformance/setup.sh conformance/requirements/*.txt; } | sha256sum | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.kvlayout-stamp" 2>/dev/null)" = "$stamp_want" ]; then
  echo "$venv/bin/python"
  exit 0
fi

start=$SECONDS
rm -rf "$venv"
"$python" -m venv "$venv"
# Output goes to stderr: stdout carries only the python path, for run.sh. --no-compile: no bytecode for the
# ~100 000 files of torch and the engines up front (CPU that CI's build needs); Python compiles what a test
# imports when it imports it.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile -r conformance/requirements/base.txt >&2
for f in conformance/requirements/*.txt; do
  engine=$(basename "$f" .txt)
  [ "$engine" = base ] && continue
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile --no-deps --target "$venv/engines/$engine" -r "$f" >&2
done
echo "$stamp_want" > "$venv/.kvlayout-stamp"
echo "conformance: environment built in $((SECONDS - start)) s ($venv)" >&2
echo "$venv/bin/python"

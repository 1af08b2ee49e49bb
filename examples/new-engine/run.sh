#!/usr/bin/env bash
# The walkthrough of README.md, end to end. Usage: examples/new-engine/run.sh [KVLAYOUT] [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvlayout=${1:-$here/../../build/kvlayout}
work=${2:-$(mktemp -d)}

echo "== 1. prove the first declaration against vLLM's FlashAttention layout"
set +e
"$kvlayout" prove vllm-flash-nhd "$here/acme-serve-v1.json" --cache small
status=$?
set -e
[ "$status" -eq 1 ] || { echo "expected the first declaration to be refused (exit 1), got $status"; exit 1; }

echo "== 2. prove the fixed declaration"
"$kvlayout" prove vllm-flash-nhd "$here/acme-serve.json" --cache small

echo "== 3. emit the kernel and call it"
"$kvlayout" emit vllm-flash-nhd "$here/acme-serve.json" --cache small --target cpu --name acme_from_vllm -o "$work/acme_kernel.cpp"
g++ -std=c++17 -O2 -pthread "$here/main.cpp" "$work/acme_kernel.cpp" -o "$work/acme_demo"
"$work/acme_demo"

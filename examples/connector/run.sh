#!/usr/bin/env bash
# The connector walkthrough of README.md, end to end. Usage: examples/connector/run.sh [KVLAYOUT] [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kvlayout=${1:-$here/../../build/kvlayout}
work=${2:-$(mktemp -d)}
cache="$here/demo-cache.json"
src=vllm-flash-nhd       # the prefill worker: vLLM FlashAttention, K/V-first
dst=vllm-flashinfer-nhd  # the decode worker: vLLM FlashInfer, blocks-first

# expect EXIT VERDICT COMMAND...: run COMMAND, show its output, require its exit code and verdict code.
expect() {
  local want=$1 verdict=$2 status=0
  shift 2
  echo "\$ kvlayout ${*:2}"
  "$@" > "$work/out.txt" 2>&1 || status=$?
  cat "$work/out.txt"
  [ "$status" -eq "$want" ] || { echo "expected exit $want, got $status"; exit 1; }
  grep -q "$verdict" "$work/out.txt" || { echo "expected verdict $verdict in the output"; exit 1; }
}

echo "== 1. dump the tensors the connector registers"
python3 "$here/dump_kv_caches.py" "$work/kv_dump.json"

echo "== 2. check the declaration against the real tensors"
expect 0 OK "$kvlayout" check $src --cache "$cache" --tensors "$work/kv_dump.json"
expect 1 GEOMETRY_MISMATCH "$kvlayout" check $dst --cache "$cache" --tensors "$work/kv_dump.json"

echo "== 3. check the layout the connector's kernel assumes"
page="block_size * num_kv_heads * head_size"
in_page="token % block_size * num_kv_heads * head_size + head * head_size + dim"
expect 1 WRONG_MAPPING "$kvlayout" check $dst --cache "$cache" \
  --assumed-offset "kv * num_blocks * $page + block_table[token / block_size] * $page + $in_page"
expect 0 OK "$kvlayout" check $dst --cache "$cache" \
  --assumed-offset "(block_table[token / block_size] * 2 + kv) * $page + $in_page"

echo "== 4. check a descriptor plan (NIXL style)"
python3 "$here/make_descriptors.py" "$work/kv_dump.json" "$work/descriptors-v1.json" --off-by-one
python3 "$here/make_descriptors.py" "$work/kv_dump.json" "$work/descriptors.json"
expect 1 WRONG_MAPPING "$kvlayout" plan check $src $dst --cache "$cache" --plan "$work/descriptors-v1.json"
expect 0 OK "$kvlayout" plan check $src $dst --cache "$cache" --plan "$work/descriptors.json"

echo "== 5. check a symbolic plan (families), for every block table"
expect 1 WRONG_MAPPING "$kvlayout" plan check $src $dst --cache "$cache" --plan "$here/families-v1.json"
expect 0 OK "$kvlayout" plan check $src $dst --cache "$cache" --plan "$here/families.json"

echo "== 6. check a block map (slots)"
expect 1 ALIASED "$kvlayout" plan check $src $dst --cache "$cache" --plan "$here/slots-v1.json"
expect 0 OK "$kvlayout" plan check $src $dst --cache "$cache" --plan "$here/slots.json"

echo "== 7. emit the verified plan, and check it"
"$kvlayout" plan emit $src $dst --cache "$cache" --format families --json > "$work/emitted-families.json"
expect 0 OK "$kvlayout" plan check $src $dst --cache "$cache" --plan "$work/emitted-families.json"
"$kvlayout" plan emit $src $dst --cache "$cache" --format descriptors --json \
  --table source.block_table=2,0,3,1 --table target.block_table=1,3,0,2 > "$work/emitted-descriptors.json"
expect 0 OK "$kvlayout" plan check $src $dst --cache "$cache" --plan "$work/emitted-descriptors.json"
echo "== all steps gave the expected verdicts"

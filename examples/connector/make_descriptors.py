#!/usr/bin/env python3
"""Step 4 of the walkthrough: the descriptor lists a NIXL-style connector builds to pull a request's KV
cache from a prefill worker (vLLM FlashAttention, K/V-first: kv_cache[l][kv][block]) into a decode worker
(vLLM FlashInfer, blocks-first: kv_cache[l][block][kv]). One descriptor per (layer, K/V, block): a page of
block_size * num_kv_heads * head_size bf16 elements = 2048 bytes, contiguous on both sides (both are NHD).

Usage: make_descriptors.py KV_DUMP.json OUT.json [--off-by-one]
  KV_DUMP.json  the prefill worker's dump (step 1): its data_ptrs are the registered source regions
  --off-by-one  the bug: pair logical block b with the decode worker's block of b + 1
"""
import json
import sys

LAYERS, BLOCKS, PAGE = 2, 4, 16 * 4 * 16 * 2
SOURCE_TABLE = [2, 0, 3, 1]  # the prefill worker's block table for the request (logical -> physical)
TARGET_TABLE = [1, 3, 0, 2]  # the blocks the decode worker allocated for it
TARGET_BASES = [0x7E0000000000 + l * 0x100000 for l in range(LAYERS)]


def main(dump_file, out, off_by_one):
    with open(dump_file) as f:
        source_bases = [int(r["data_ptr"], 16) for r in sorted(json.load(f)["tensors"], key=lambda r: r["instance"])]
    src, dst = [], []
    for layer in range(LAYERS):
        for kv in range(2):
            for b in range(BLOCKS):
                # FlashAttention: page (kv, block); FlashInfer: page (block, kv).
                src.append([hex(source_bases[layer] + (kv * BLOCKS + SOURCE_TABLE[b]) * PAGE), PAGE])
                tb = TARGET_TABLE[(b + 1) % BLOCKS] if off_by_one else TARGET_TABLE[b]
                dst.append([hex(TARGET_BASES[layer] + (tb * 2 + kv) * PAGE), PAGE])
    plan = {
        "form": "descriptors",
        "source_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(source_bases[l])} for l in range(LAYERS)],
        "target_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(TARGET_BASES[l])} for l in range(LAYERS)],
        "source_descriptors": src,
        "target_descriptors": dst,
        "tables": {"source.block_table": SOURCE_TABLE, "target.block_table": TARGET_TABLE},
    }
    with open(out, "w") as f:
        json.dump(plan, f, indent=1)
    print("wrote %d descriptor pair(s) to %s" % (len(src), out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--off-by-one" in sys.argv[3:])

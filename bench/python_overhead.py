#!/usr/bin/env python3
"""What calling a cached kvlayout.Relayout from Python costs on top of the bare C call.

For a small cache (kvlayout's `small` shape, 40 KiB) and a 1 GiB one (llama-3.1-8b at 8192 tokens, bf16),
the same kernel runs on the same buffers two ways, in interleaved rounds:
  python  relayout(src, dst, src_tables, dst_tables, num_tokens): the Python call, the argument checks
          against the ABI (count, device, dtype, size, contiguity of every array) and the C call;
  bare    the C function alone, timed in C++ around the call (Kernel.time_bare), no Python in between.
Each round times `--calls` calls of each and keeps the median; the report gives the medians over rounds,
their ratio and the absolute overhead per call.

    PYTHONPATH=build/python python3 bench/python_overhead.py [--rounds 7] [--json]
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import kvlayout

PAIR = ("vllm-flash-nhd", "sglang-mha")
CASES = [  # (label, cache, params, calls per round)
    ("small (40 KiB)", "small", None, 2000),
    ("1 GiB", "llama-3.1-8b", {"num_tokens": 8192}, 3),
]


def buffers(move):
    rng = np.random.default_rng(1)
    src = [np.full(b["elements"], 7, dtype=np.uint16) for b in move.abi["source"]["buffers"]]
    dst = [np.zeros(b["elements"], dtype=np.uint16) for b in move.abi["destination"]["buffers"]]
    tables = []
    for side in ("source", "destination"):
        tables.append([(rng.permutation(t["length"]) + t["first"]).astype(np.int32) for t in move.abi[side]["tables"]])
    return src, dst, tables[0], tables[1]


def measure(label, cache, params, calls, rounds, threads):
    move = kvlayout.Relayout(*PAIR, cache, params=params)
    src, dst, st, dt = buffers(move)
    n = move.max_tokens
    move(src, dst, st, dt, n, threads)  # warm: pages touched, code loaded
    python_rounds, bare_rounds = [], []
    for r in range(rounds):
        order = ("python", "bare") if r % 2 == 0 else ("bare", "python")
        for which in order:
            if which == "python":
                per_call = []
                for _ in range(calls):
                    start = time.perf_counter()
                    move(src, dst, st, dt, n, threads)
                    per_call.append(time.perf_counter() - start)
                python_rounds.append(statistics.median(per_call))
            else:
                bare_rounds.append(statistics.median(move._kernel.time_bare(src, dst, st, dt, n, threads, calls)))
    py, bare = statistics.median(python_rounds), statistics.median(bare_rounds)
    return {"case": label, "pair": " -> ".join(PAIR), "cache": cache, "params": params or {},
            "bytes": int(sum(b.nbytes for b in dst)), "threads": threads, "rounds": rounds, "calls_per_round": calls,
            "python_us": py * 1e6, "bare_us": bare * 1e6, "ratio": py / bare, "overhead_us": (py - bare) * 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--threads", type=int, default=1, help="kernel threads (default 1)")
    parser.add_argument("--small-only", action="store_true", help="skip the 1 GiB case")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    rows = [measure(label, cache, params, calls, args.rounds, args.threads)
            for label, cache, params, calls in CASES if not (args.small_only and cache != "small")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("%-16s %12s %12s %8s %12s" % ("case", "python us", "bare C us", "ratio", "overhead us"))
    for r in rows:
        print("%-16s %12.2f %12.2f %8.3f %12.2f" % (r["case"], r["python_us"], r["bare_us"], r["ratio"], r["overhead_us"]))
    print("(%s, %d thread(s), medians of %d interleaved rounds)" % (rows[0]["pair"], args.threads, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The moves a user would write instead of kvlayout's kernel, timed on the same buffers.

For every ordered pair of eight engine layouts (the six headline pairs among them), this script emits
kvlayout's CPU kernel (`kvlayout emit`), compiles it with -O2 and calls it through ctypes, then runs the
same move written the way a connector author would write it:

  numpy  per layer and K/V: gather the source's blocks with fancy indexing, view them as [token, head,
         dim] with a transpose, and assign through the target's block table (fancy-index assignment of a
         transposed view). numpy is single-threaded, so it is compared at every thread count as is.
  torch  (when installed) the same with index_select + permute + index_copy_ on tensors sharing the numpy
         buffers, with torch.set_num_threads(threads).

Each peer's result is compared element by element with the kernel's (an independent formula for the
same move: a wrong peer or kernel fails the run). Figures are medians over interleaved repetitions;
ratios are peer time over kernel time (above 1: kvlayout is faster).

Usage: bench/peers.py [--kvlayout build/kvlayout] [--mib 256] [--repetitions 5] [--threads 1,2]
                      [--pairs headline|all] [--pair SOURCE/TARGET ...] [--json FILE] [--verify-only]

--verify-only times nothing: it checks every peer against the kernel and runs a control (the kernel
called with two target table entries swapped must disagree with the numpy peer). The test suite runs it.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import torch
except ImportError:  # the torch peer is skipped, with the reason printed
    torch = None

L, H, D = 32, 8, 128  # llama-3.1-8b: 32 layers, 8 KV heads, head size 128 (bf16 moved as 16-bit words)

HEADLINE = [("hf-dynamic", "vllm-flash-nhd"), ("vllm-flash-nhd", "lmcache-2ltd"), ("trtllm-pool", "vllm-flash-nhd"),
            ("vllm-flash-nhd", "sglang-mha"), ("vllm-flash-nhd", "vllm-flash-hnd"), ("vllm-paged-legacy", "vllm-flash-nhd")]


# --placement numpy: every buffer where np.empty puts it (16 bytes past a page), not on a page.
PLACE_ON_PAGES = True


def empty_on_pages(shape):
    """An uninitialised int16 array that starts on a 4 KiB page, as the sweep's buffers do and as a serving
    engine's cache does (torch's allocators align to 64 bytes or more, pinned host memory to pages).
    np.empty's large arrays start 16 bytes past a page (malloc's header): every 4 KiB block of a
    page-aligned layout then straddles two pages and 65 lines (measured before the kernels streamed into
    targets off a line: the kernel of hf-dynamic -> vllm-flash-hnd 25-28 ms there against 15.4 ms on
    pages; numpy took 28 ms either way)."""
    if not PLACE_ON_PAGES:
        return np.empty(shape, np.int16)
    count = int(np.prod(shape))
    raw = np.empty(count * 2 + 4096, np.uint8)
    start = (-raw.ctypes.data) % 4096
    return raw[start:start + count * 2].view(np.int16).reshape(shape)


class Layout:
    """One engine's buffers (in the kernel ABI's order: tensors in declaration order, instances within),
    block tables, and the per-(layer, kv) read and write a user would write, for numpy and torch."""

    def __init__(self, name, tokens, rng):
        self.name, self.T = name, tokens
        T = tokens
        self.tables = []
        if name in ("vllm-flash-nhd", "vllm-flash-hnd", "vllm-paged-legacy"):
            self.NB = T // 16
            self.tables = [rng.permutation(self.NB).astype(np.int32)]
            inner = (2, self.NB, 16, H, D) if name == "vllm-flash-nhd" else (2, self.NB, H, 16, D) if name == "vllm-flash-hnd" else (2, self.NB * 16 * H * D)
            self.buffers = [empty_on_pages(inner) for _ in range(L)]
        elif name == "trtllm-pool":
            self.NB = T // 32
            self.tables = [rng.permutation(self.NB).astype(np.int32)]
            self.buffers = [empty_on_pages((self.NB, L, 2, H, 32, D))]
        elif name == "sglang-mha":
            self.tables = [(rng.permutation(T) + 1).astype(np.int32)]  # slot 0 is SGLang's padding slot
            self.buffers = [empty_on_pages((T + 1, H, D)) for _ in range(2 * L)]
        elif name == "lmcache-2ltd":
            self.buffers = [empty_on_pages((2, L, T, H * D))]
        elif name == "hf-dynamic":
            self.buffers = [empty_on_pages((1, H, T, D)) for _ in range(2 * L)]
        elif name == "llamacpp-vtrans":  # per layer K [1, kv_size, H*D], then per layer V [1, H*D, kv_size]; kv_size = T
            self.tables = [rng.permutation(T).astype(np.int32)]  # cells: any distinct cells
            self.buffers = [empty_on_pages((1, T, H * D)) for _ in range(L)] + [empty_on_pages((1, H * D, T)) for _ in range(L)]
        else:
            raise ValueError(name)
        for b in self.buffers:
            b.fill(0)
        self.index = [t.astype(np.int64) for t in self.tables]

    # numpy: [T, H, D] for (layer, kv), and its inverse.
    def read_np(self, l, k):
        n, T = self.name, self.T
        if n == "vllm-flash-nhd":
            return self.buffers[l][k][self.index[0]].reshape(T, H, D)
        if n == "vllm-flash-hnd":
            return self.buffers[l][k][self.index[0]].transpose(0, 2, 1, 3).reshape(T, H, D)
        if n == "vllm-paged-legacy":
            half = self.buffers[l][k]
            if k == 0:  # key_cache [NB, H, D/8, 16, 8]
                return half.reshape(self.NB, H, D // 8, 16, 8)[self.index[0]].transpose(0, 3, 1, 2, 4).reshape(T, H, D)
            return half.reshape(self.NB, H, D, 16)[self.index[0]].transpose(0, 3, 1, 2).reshape(T, H, D)
        if n == "trtllm-pool":
            return self.buffers[0][self.index[0], l, k].transpose(0, 2, 1, 3).reshape(T, H, D)
        if n == "sglang-mha":
            return self.buffers[k * L + l][self.index[0]]
        if n == "lmcache-2ltd":
            return self.buffers[0][k, l].reshape(T, H, D)
        if n == "llamacpp-vtrans":
            if k == 0:
                return self.buffers[l][0][self.index[0]].reshape(T, H, D)
            return self.buffers[L + l][0][:, self.index[0]].T.reshape(T, H, D)
        return self.buffers[k * L + l][0].transpose(1, 0, 2)  # hf-dynamic

    def write_np(self, l, k, x):
        n, T = self.name, self.T
        if n == "vllm-flash-nhd":
            self.buffers[l][k][self.index[0]] = x.reshape(self.NB, 16, H, D)
        elif n == "vllm-flash-hnd":
            self.buffers[l][k][self.index[0]] = x.reshape(self.NB, 16, H, D).transpose(0, 2, 1, 3)
        elif n == "vllm-paged-legacy":
            half = self.buffers[l][k]
            if k == 0:
                half.reshape(self.NB, H, D // 8, 16, 8)[self.index[0]] = x.reshape(self.NB, 16, H, D // 8, 8).transpose(0, 2, 3, 1, 4)
            else:
                half.reshape(self.NB, H, D, 16)[self.index[0]] = x.reshape(self.NB, 16, H, D).transpose(0, 2, 3, 1)
        elif n == "trtllm-pool":
            self.buffers[0][self.index[0], l, k] = x.reshape(self.NB, 32, H, D).transpose(0, 2, 1, 3)
        elif n == "sglang-mha":
            self.buffers[k * L + l][self.index[0]] = x
        elif n == "lmcache-2ltd":
            self.buffers[0][k, l] = x.reshape(T, H * D)
        elif n == "llamacpp-vtrans":
            if k == 0:
                self.buffers[l][0][self.index[0]] = x.reshape(T, H * D)
            else:
                self.buffers[L + l][0][:, self.index[0]] = x.reshape(T, H * D).T
        else:
            self.buffers[k * L + l][0] = x.transpose(1, 0, 2)

    # torch: the same with index_select / permute / index_copy_ on tensors that share the numpy buffers.
    def torch_views(self):
        self.tb = [torch.from_numpy(b) for b in self.buffers]
        self.ti = [torch.from_numpy(i) for i in self.index]

    def read_torch(self, l, k):
        n, T, b, i = self.name, self.T, self.tb, self.ti
        if n == "vllm-flash-nhd":
            return b[l][k].index_select(0, i[0]).reshape(T, H, D)
        if n == "vllm-flash-hnd":
            return b[l][k].index_select(0, i[0]).permute(0, 2, 1, 3).reshape(T, H, D)
        if n == "vllm-paged-legacy":
            if k == 0:
                return b[l][k].view(self.NB, H, D // 8, 16, 8).index_select(0, i[0]).permute(0, 3, 1, 2, 4).reshape(T, H, D)
            return b[l][k].view(self.NB, H, D, 16).index_select(0, i[0]).permute(0, 3, 1, 2).reshape(T, H, D)
        if n == "trtllm-pool":
            return b[0][:, l, k].index_select(0, i[0]).permute(0, 2, 1, 3).reshape(T, H, D)
        if n == "sglang-mha":
            return b[k * L + l].index_select(0, i[0])
        if n == "lmcache-2ltd":
            return b[0][k, l].view(T, H, D)
        if n == "llamacpp-vtrans":
            if k == 0:
                return b[l][0].index_select(0, i[0]).view(T, H, D)
            return b[L + l][0].index_select(1, i[0]).t().reshape(T, H, D)
        return b[k * L + l][0].permute(1, 0, 2)

    def write_torch(self, l, k, x):
        n, b, i = self.name, self.tb, self.ti
        if n == "vllm-flash-nhd":
            b[l][k].index_copy_(0, i[0], x.reshape(self.NB, 16, H, D))
        elif n == "vllm-flash-hnd":
            b[l][k].index_copy_(0, i[0], x.reshape(self.NB, 16, H, D).permute(0, 2, 1, 3).contiguous())
        elif n == "vllm-paged-legacy":
            if k == 0:
                b[l][k].view(self.NB, H, D // 8, 16, 8).index_copy_(0, i[0], x.reshape(self.NB, 16, H, D // 8, 8).permute(0, 2, 3, 1, 4).contiguous())
            else:
                b[l][k].view(self.NB, H, D, 16).index_copy_(0, i[0], x.reshape(self.NB, 16, H, D).permute(0, 2, 3, 1).contiguous())
        elif n == "trtllm-pool":
            b[0][:, l, k].index_copy_(0, i[0], x.reshape(self.NB, 32, H, D).permute(0, 2, 1, 3).contiguous())
        elif n == "sglang-mha":
            b[k * L + l].index_copy_(0, i[0], x)
        elif n == "lmcache-2ltd":
            b[0][k, l].copy_(x.reshape(self.T, H * D))
        elif n == "llamacpp-vtrans":
            if k == 0:
                b[l][0].index_copy_(0, i[0], x.reshape(self.T, H * D))
            else:
                b[L + l][0].index_copy_(1, i[0], x.reshape(self.T, H * D).t())
        else:
            b[k * L + l][0].copy_(x.permute(1, 0, 2))

    def pointers(self):
        arr = (ctypes.c_void_p * len(self.buffers))(*[b.ctypes.data for b in self.buffers])
        tables = (ctypes.POINTER(ctypes.c_int32) * max(1, len(self.tables)))(
            *[t.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)) for t in self.tables])
        return arr, (tables if self.tables else None)

    def snapshot(self):
        return [b.copy() for b in self.buffers]

    def clear(self):
        for b in self.buffers:
            b.fill(0)


def compile_kernel(kvlayout, source, target, tokens, workdir, optimise="-O2"):
    name = "peer_" + source.replace("-", "_") + "__" + target.replace("-", "_")
    cpp, so = os.path.join(workdir, name + ".cpp"), os.path.join(workdir, name + ".so")
    subprocess.run([kvlayout, "emit", source, target, "--cache", "llama-3.1-8b", "--param", "num_tokens=%d" % tokens,
                    "--target", "cpu", "--name", name, "-o", cpp], check=True)
    subprocess.run([os.environ.get("CXX", "c++"), "-std=c++17", optimise, "-fPIC", "-shared", "-pthread", cpp, "-o", so], check=True)
    fn = getattr(ctypes.CDLL(so), name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    return fn


def timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvlayout", default=os.path.join(os.path.dirname(__file__), "..", "build", "kvlayout"))
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pairs", choices=["headline", "all"], default="all")
    ap.add_argument("--pair", action="append", default=[], metavar="SOURCE/TARGET",
                    help="only these pairs (repeatable; SOURCE or TARGET may be *)")
    ap.add_argument("--json")
    ap.add_argument("--verify-only", action="store_true")
    ap.add_argument("--placement", choices=["page", "numpy"], default="page",
                    help="buffers on 4 KiB pages (default), or where np.empty puts them (16 bytes past a page)")
    args = ap.parse_args()
    global PLACE_ON_PAGES
    PLACE_ON_PAGES = args.placement == "page"
    threads = [int(t) for t in args.threads.split(",")]
    tokens = max(32, (args.mib << 20) // (L * 2 * H * D * 2) // 32 * 32)
    names = ["vllm-flash-nhd", "vllm-flash-hnd", "sglang-mha", "lmcache-2ltd", "vllm-paged-legacy", "trtllm-pool", "hf-dynamic",
             "llamacpp-vtrans"]
    pairs = HEADLINE if args.pairs == "headline" else [(s, t) for s in names for t in names if s != t]
    if args.pair:
        wanted = [p.split("/", 1) for p in args.pair]
        if any(len(w) != 2 or not all(x == "*" or x in names for x in w) for w in wanted):
            ap.error("--pair takes SOURCE/TARGET with each one of %s or *" % ", ".join(names))
        pairs = [(s, t) for s, t in pairs if any(ws in ("*", s) and wt in ("*", t) for ws, wt in wanted)]
    if torch is None:
        print("torch peer skipped: torch is not installed (pip install torch)", file=sys.stderr)
    rows = []
    controlled = False
    with tempfile.TemporaryDirectory() as workdir:
        for source, target in pairs:
            kernel = compile_kernel(args.kvlayout, source, target, tokens, workdir, "-O1" if args.verify_only else "-O2")
            rng = np.random.default_rng(20261201)
            S, T = Layout(source, tokens, rng), Layout(target, tokens, rng)
            for b in S.buffers:
                b[...] = rng.integers(-32768, 32767, size=b.shape, dtype=np.int16)
            s_ptr, s_tab = S.pointers()
            t_ptr, t_tab = T.pointers()

            def run_kernel(n):
                code = kernel(s_ptr, t_ptr, s_tab, t_tab, tokens, n)
                if code != 0:
                    raise RuntimeError("%s -> %s: kernel returned %d" % (source, target, code))

            def run_numpy():
                for l in range(L):
                    for k in range(2):
                        T.write_np(l, k, S.read_np(l, k))

            def run_torch(n):
                torch.set_num_threads(n)
                with torch.no_grad():
                    for l in range(L):
                        for k in range(2):
                            T.write_torch(l, k, S.read_torch(l, k))

            # Correctness first: every peer must leave the target exactly as the kernel does.
            run_kernel(1)
            expected = T.snapshot()
            peers = {"numpy": lambda n: run_numpy()}
            if torch is not None:
                S.torch_views(), T.torch_views()
                peers["torch"] = run_torch
            for peer, f in peers.items():
                T.clear()
                f(1)
                for b, e in zip(T.buffers, expected):
                    if not np.array_equal(b, e):
                        raise SystemExit("%s -> %s: the %s peer and the kernel disagree" % (source, target, peer))
            if args.verify_only:
                if T.tables and not controlled:
                    # Control: the kernel with two target table entries swapped moves other bytes than the
                    # numpy peer with the true table; the comparison must see it.
                    swapped = T.tables[0].copy()
                    swapped[[0, 1]] = swapped[[1, 0]]
                    t_swapped = (ctypes.POINTER(ctypes.c_int32) * 1)(swapped.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
                    T.clear()
                    if kernel(s_ptr, t_ptr, s_tab, t_swapped, tokens, 1) != 0:
                        raise SystemExit("control: the kernel refused a permuted table")
                    wrong = T.snapshot()
                    T.clear()
                    run_numpy()
                    if all(np.array_equal(b, w) for b, w in zip(T.buffers, wrong)):
                        raise SystemExit("control failed: a kernel run with two target blocks swapped agreed with the numpy peer")
                    controlled = True
                print("%-18s -> %-18s kernel and %s agree on every element" % (source, target, " and ".join(peers)), flush=True)
                continue
            times = {}
            for r in range(args.repetitions):
                for n in threads:
                    order = [("kvlayout", lambda n=n: run_kernel(n))] + [(p, lambda f=f, n=n: f(n)) for p, f in peers.items()]
                    if r % 2 == 1:
                        order.reverse()
                    for who, f in order:
                        times.setdefault((who, n), []).append(timed(f))
            row = {"source": source, "target": target, "tokens": tokens, "threads": {}}
            line = "%-18s -> %-18s" % (source, target)
            for n in threads:
                k = statistics.median(times[("kvlayout", n)])
                entry = {"kvlayout_s": k}
                line += "  %dT kvlayout %6.1f ms" % (n, k * 1e3)
                for p in peers:
                    t = statistics.median(times[(p, n)])
                    entry[p + "_s"], entry[p + "_ratio"] = t, t / k
                    line += " %s %5.1fx" % (p, t / k)
                row["threads"][str(n)] = entry
            print(line, flush=True)
            rows.append(row)
    if args.verify_only:
        if not controlled:
            raise SystemExit("control did not run: no pair has a target block table")
        print("control: two swapped target blocks were caught")
        return 0
    worst = {}
    for row in rows:
        for n, entry in row["threads"].items():
            for key, v in entry.items():
                if key.endswith("_ratio"):
                    worst[(key[:-6], n)] = min(worst.get((key[:-6], n), v), v)
    for (peer, n), v in sorted(worst.items()):
        print("%s at %s thread(s): slowest relative to kvlayout %.1fx%s" % (peer, n, v, "" if v > 1 else "  <- kvlayout is not faster"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mib": args.mib, "torch": None if torch is None else torch.__version__, "numpy": np.__version__, "pairs": rows}, f, indent=2)
    return 0 if all(v > 1 for v in worst.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

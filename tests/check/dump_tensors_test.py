#!/usr/bin/env python3
"""scripts/dump_tensors.py end to end: dump tensors shaped like vLLM's FlashAttention NHD cache on the
`small` cache shape, then let kvlayout check the declaration against the dump (exit 0), and a dump of
padded pages (exit 1, GEOMETRY_MISMATCH). Runs without numpy or torch: duck-typed stand-ins always, real
numpy arrays too when numpy is installed.

Usage: dump_tensors_test.py KVLAYOUT_BINARY   (or KVLAYOUT_BINARY in the environment)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from dump_tensors import RawTensor, dump_tensors  # noqa: E402

KVLAYOUT = os.environ.get("KVLAYOUT_BINARY", "")
LAYERS, BLOCKS, BLOCK, HEADS, DIM = 2, 5, 16, 4, 16  # vllm-flash-nhd on `small`: 67 tokens in 5 blocks
SHAPE = (2, BLOCKS, BLOCK, HEADS, DIM)
PAGE = BLOCK * HEADS * DIM  # 1024 elements


class FakeDType:
    def __init__(self, name):
        self.name = name


class FakeCtypes:
    def __init__(self, data):
        self.data = data


class FakeArray:
    """Just what dump_tensors reads of a numpy array: a strided view of an owner allocation."""

    def __init__(self, shape, strides, itemsize, dtype, address, base=None):
        self.shape, self.strides, self.itemsize = tuple(shape), tuple(strides), itemsize
        self.dtype, self.ctypes, self.base = FakeDType(dtype), FakeCtypes(address), base
        n = 1
        for s in shape:
            n *= s
        self.nbytes = n * itemsize


def fake_cache(address, page):
    """One layer: an owner of 2 * BLOCKS pages of `page` uint16 elements, viewed as SHAPE."""
    owner = FakeArray((2 * BLOCKS * page,), (2,), 2, "uint16", address)
    strides = tuple(2 * s for s in (BLOCKS * page, page, HEADS * DIM, DIM, 1))
    return FakeArray(SHAPE, strides, 2, "uint16", address, base=owner)


def run(*args):
    return subprocess.run([KVLAYOUT] + list(args), capture_output=True, text=True)


class DumpTensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, tensors, name, **kw):
        path = os.path.join(self.dir.name, name)
        dump_tensors(tensors, path, **kw)
        with open(path) as f:
            return path, json.load(f)

    def check_declaration(self, dump, expect_exit):
        """kvlayout's verdict on vllm-flash-nhd against `dump`: through `check REAL --tensors` once the
        check command exists, and always through `prove ... --tensors` (the same geometry check)."""
        results = [run("prove", "vllm-flash-nhd", "vllm-flash-hnd", "--cache", "small", "--tensors", dump)]
        check = run("check", "vllm-flash-nhd", "--cache", "small", "--tensors", dump)
        if "not yet implemented" not in check.stderr:
            results.append(check)
        for r in results:
            self.assertEqual(r.returncode, expect_exit, r.stdout + r.stderr)
        return results

    def test_records_of_numpy_like_views(self):
        caches = [fake_cache(0x7F0000000000 + l * 0x10000, PAGE) for l in range(LAYERS)]
        path, dump = self.write({"kv_cache": caches}, "good.json")
        self.assertEqual(len(dump["tensors"]), LAYERS)
        r = dump["tensors"][1]
        self.assertEqual(r["tensor"], "kv_cache")
        self.assertEqual(r["instance"], 1)
        self.assertEqual(r["shape"], [2, 5, 16, 4, 16])
        self.assertEqual(r["stride"], [5120, 1024, 64, 16, 1])
        self.assertEqual(r["storage_offset"], 0)
        self.assertEqual((r["dtype"], r["element_size"], r["nbytes"], r["storage_nbytes"]), ("uint16", 2, 20480, 20480))
        self.assertEqual(r["data_ptr"], "0x7f0000010000")
        self.check_declaration(path, 0)

    def test_padded_pages_are_a_geometry_mismatch(self):
        caches = [fake_cache(0x7F0000000000 + l * 0x10000, PAGE + 64) for l in range(LAYERS)]
        path, dump = self.write(caches, "padded.json", names="kv_cache")
        self.assertEqual(dump["tensors"][0]["stride"], [5440, 1088, 64, 16, 1])
        for r in self.check_declaration(path, 1):
            self.assertIn("GEOMETRY_MISMATCH", r.stdout)
            self.assertIn("declared 1024, observed 1088", r.stdout)

    def test_views_into_an_allocation_report_their_offset(self):
        owner = FakeArray((4096,), (2,), 2, "uint16", 0x1000)
        view = FakeArray((16, 16), (32, 2), 2, "uint16", 0x1000 + 2 * 512, base=owner)
        r = dump_tensors([view])["tensors"][0]
        self.assertEqual((r["storage_offset"], r["storage_nbytes"], r["stride"]), (512, 8192, [16, 1]))
        reversed_view = FakeArray((16,), (-2,), 2, "uint16", 0x1000 + 30, base=owner)
        with self.assertRaises(ValueError):
            dump_tensors([reversed_view])

    def test_torch_like_tensors_and_names(self):
        class TorchDType:
            def __str__(self):
                return "torch.bfloat16"

        k = RawTensor((68, 4, 16), (64, 16, 1), TorchDType(), 2, 0x7F0000000000, 0, 8704)
        v = RawTensor((68, 4, 16), (64, 16, 1), TorchDType(), 2, 0x7F0000010000, 0, 8704)
        dump = dump_tensors([k, v, k, v], names=["k_buffer", "v_buffer", "k_buffer", "v_buffer"])
        self.assertEqual([(r["tensor"], r["instance"]) for r in dump["tensors"]],
                         [("k_buffer", 0), ("v_buffer", 0), ("k_buffer", 1), ("v_buffer", 1)])
        self.assertEqual(dump["tensors"][0]["dtype"], "bfloat16")
        self.assertEqual(dump["tensors"][0]["storage_nbytes"], 8704)
        views = dump_tensors({"kv_cache": [{"key_cache": k, "value_cache": v}]})["tensors"]
        self.assertEqual([r["view"] for r in views], ["key_cache", "value_cache"])
        with self.assertRaises(TypeError):
            dump_tensors([object()])

    def test_real_numpy_arrays(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is not installed (the duck-typed tests above cover the same records)")
        nbytes = 2 * BLOCKS * PAGE * 2
        # As vLLM builds them: a raw byte buffer per layer, viewed as the element type, reshaped.
        caches = [np.zeros(nbytes, dtype=np.uint8).view(np.uint16).reshape(SHAPE) for _ in range(LAYERS)]
        path, dump = self.write({"kv_cache": caches}, "numpy.json")
        self.assertEqual(dump["tensors"][0]["storage_nbytes"], nbytes)
        self.check_declaration(path, 0)
        padded = [np.zeros((2, BLOCKS, PAGE + 64), dtype=np.uint16)[:, :, :PAGE].reshape(SHAPE) for _ in range(LAYERS)]
        path, dump = self.write(padded, "numpy-padded.json")
        self.assertEqual(dump["tensors"][0]["stride"], [5440, 1088, 64, 16, 1])
        self.check_declaration(path, 1)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        KVLAYOUT = sys.argv.pop(1)
    if not KVLAYOUT:
        sys.exit("usage: dump_tensors_test.py KVLAYOUT_BINARY")
    unittest.main()

#!/usr/bin/env python3
"""Write what a connector sees of its KV cache tensors, for `kvlayout check REAL --tensors DUMP`.

The code is python/kvlayout/tensor_dump.py (standard library only; the Python package's
kvlayout.tensor_geometry is the same function). This script loads that file from the checkout, so that
`from dump_tensors import dump_tensors` keeps working with scripts/ on sys.path:

    from dump_tensors import dump_tensors
    dump_tensors({"kv_cache": kv_caches_per_layer}, "dump.json")

Run alone, it writes the demo dump of vLLM's FlashAttention cache on the `small` shape (see _demo there).
"""
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "kvlayout_tensor_dump", os.path.join(_here, os.pardir, "python", "kvlayout", "tensor_dump.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

dump_tensors = _module.dump_tensors
tensor_record = _module.tensor_record
RawTensor = _module.RawTensor
__all__ = ["dump_tensors", "tensor_record", "RawTensor"]

if __name__ == "__main__":
    _module._demo(sys.argv[1] if len(sys.argv) > 1 else "dump.json")

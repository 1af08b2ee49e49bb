#!/usr/bin/env python3
"""Step 1 of the walkthrough: what a connector does at registration time, with numpy standing in for the
engine's torch tensors. vLLM's FlashAttention backend gives each layer a tensor of shape
(2, num_blocks, block_size, num_kv_heads, head_size), made from a raw byte buffer viewed as the element
type; that is rebuilt here for the demo cache shape (4 blocks of 16 tokens, 4 heads of 16, bf16), and
dump_tensors() writes what kvlayout needs to check a declaration against it.

Usage: dump_kv_caches.py OUT.json
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from dump_tensors import RawTensor, dump_tensors  # noqa: E402

LAYERS, SHAPE = 2, (2, 4, 16, 4, 16)
NBYTES = 2 * 4 * 16 * 4 * 16 * 2  # 16384 bytes per layer


def kv_caches():
    try:
        import numpy as np
    except ImportError:
        # Without numpy, the same tensors described by hand (pointer, shape, strides in elements).
        stride = (4096, 1024, 64, 16, 1)
        return [RawTensor(SHAPE, stride, "bfloat16", 2, 0x7F0000000000 + l * 0x100000, 0, NBYTES) for l in range(LAYERS)]
    # numpy has no bfloat16: uint16 carries its bits (kvlayout accepts a raw unsigned type of the width).
    return [np.zeros(NBYTES, dtype=np.uint8).view(np.uint16).reshape(SHAPE) for _ in range(LAYERS)]


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "kv_dump.json"
    dump = dump_tensors({"kv_cache": kv_caches()}, out)
    print("wrote %d tensor record(s) to %s" % (len(dump["tensors"]), out))

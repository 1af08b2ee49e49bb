#!/usr/bin/env python3
"""Write what a connector sees of its KV cache tensors, for `kvlayout check REAL --tensors DUMP`.

This module is kvlayout.tensor_dump (kvlayout.tensor_geometry calls it) and needs nothing but the standard
library: it may be copied alone into a connector's tree, and scripts/dump_tensors.py runs it from a checkout.

Call it where the connector registers its memory (e.g. a NIXL `register_kv_caches`), with the tensors it
got from the engine:

    from dump_tensors import dump_tensors
    dump_tensors({"kv_cache": kv_caches_per_layer}, "dump.json")        # torch tensors, one per layer
    dump_tensors(arrays, "dump.json", names="kv_cache")                 # numpy arrays, same thing

then `kvlayout check vllm-flash-nhd --cache my-model --tensors dump.json` says whether the declaration
describes them (extents in declared order, element strides, storage offset, element type, sizes, and which
instances share one allocation), or GEOMETRY_MISMATCH naming the axis and both values.

Standard library only: tensors are read by duck typing, never by importing torch or numpy.
  torch:  .shape, .stride(), .storage_offset(), .dtype, .element_size(), .data_ptr(),
          .untyped_storage().nbytes() (the whole allocation)
  numpy:  .shape, .strides (bytes), .dtype.name, .itemsize, .nbytes, .ctypes.data, .base (the owner of
          the allocation: storage_offset and storage_nbytes are measured from it)
  RawTensor below: a pointer, shape and stride from anywhere else (a C++ engine, ctypes).
"""
import json
import sys

__all__ = ["dump_tensors", "tensor_record", "RawTensor"]


class RawTensor:
    """A strided tensor described by hand, read like a torch tensor (strides in elements)."""

    def __init__(self, shape, stride, dtype, element_size, data_ptr, storage_offset=0, storage_nbytes=None):
        self.shape = tuple(shape)
        self._stride = tuple(stride)
        self.dtype = dtype
        self._element_size = element_size
        self._data_ptr = data_ptr
        self._storage_offset = storage_offset
        self._storage_nbytes = storage_nbytes

    def stride(self):
        return self._stride

    def storage_offset(self):
        return self._storage_offset

    def element_size(self):
        return self._element_size

    def data_ptr(self):
        return self._data_ptr

    def untyped_storage(self):
        if self._storage_nbytes is None:
            raise AttributeError("storage size unknown")
        nbytes = self._storage_nbytes
        return type("Storage", (), {"nbytes": lambda self: nbytes})()


def _product(values):
    out = 1
    for v in values:
        out *= int(v)
    return out


def _is_torch_like(t):
    return callable(getattr(t, "stride", None)) and callable(getattr(t, "data_ptr", None))


def _is_numpy_like(t):
    return hasattr(t, "strides") and hasattr(t, "ctypes") and hasattr(t, "itemsize")


def _torch_record(t):
    esz = int(t.element_size())
    record = {
        "shape": [int(s) for s in t.shape],
        "stride": [int(s) for s in t.stride()],
        "storage_offset": int(t.storage_offset()),
        "dtype": str(t.dtype).replace("torch.", ""),
        "element_size": esz,
        "nbytes": _product(t.shape) * esz,
        "data_ptr": hex(int(t.data_ptr())),
    }
    try:
        record["storage_nbytes"] = int(t.untyped_storage().nbytes())
    except (AttributeError, RuntimeError, TypeError):
        pass  # older torch, or a tensor without a storage: the check then skips the allocation-size test
    device = getattr(t, "device", None)
    if device is not None:
        record["device"] = str(device)
    return record


def _numpy_owner(a):
    """The array that owns the allocation `a` views: the last array on its .base chain. The chain may pass
    through objects that are not arrays (np.lib.stride_tricks.as_strided keeps its source behind a
    DummyArray), so it is followed through anything with a .base, for a bounded number of steps."""
    owner, node = a, a
    for _ in range(64):
        node = getattr(node, "base", None)
        if node is None:
            break
        if _is_numpy_like(node):
            owner = node
    return owner


def _numpy_record(a):
    esz = int(a.itemsize)
    for axis, s in enumerate(a.strides):
        if s < 0 or s % esz:
            raise ValueError("axis %d has a byte stride of %d: not a non-negative multiple of the item size %d "
                             "(a reversed or byte-offset view has no element stride)" % (axis, s, esz))
    owner = _numpy_owner(a)
    offset_bytes = int(a.ctypes.data) - int(owner.ctypes.data)
    if offset_bytes < 0 or offset_bytes % esz:
        raise ValueError("the array starts %d bytes into its allocation: not a multiple of the item size %d"
                         % (offset_bytes, esz))
    return {
        "shape": [int(s) for s in a.shape],
        "stride": [int(s) // esz for s in a.strides],
        "storage_offset": offset_bytes // esz,
        "dtype": str(a.dtype.name),
        "element_size": esz,
        "nbytes": int(a.nbytes),
        "storage_nbytes": int(owner.nbytes),
        "data_ptr": hex(int(a.ctypes.data)),
    }


def tensor_record(t, tensor, instance, view=None):
    """One record of the dump: the tensor (torch, numpy or RawTensor) as the declaration's `tensor`,
    instance number `instance` and, for a tensor with several views, view name `view`."""
    if _is_torch_like(t):
        body = _torch_record(t)
    elif _is_numpy_like(t):
        body = _numpy_record(t)
    else:
        raise TypeError("%s instance %d: %r is neither a torch tensor nor a numpy array" % (tensor, instance, type(t)))
    record = {"tensor": tensor, "instance": instance}
    if view is not None:
        record["view"] = view
    record.update(body)
    return record


def _instance_records(name, instance, value):
    # An instance is a tensor, or a dict {view name: tensor} for a declaration with several views.
    if isinstance(value, dict):
        return [tensor_record(t, name, instance, view) for view, t in value.items()]
    return [tensor_record(value, name, instance)]


def _format(dump):
    # One record a line: a dump of 80 layers stays readable and diffable.
    lines = ",\n".join("  " + json.dumps(r) for r in dump["tensors"])
    return '{"generator": %s,\n "tensors": [\n%s\n]}\n' % (json.dumps(dump["generator"]), lines)


def dump_tensors(tensors, path=None, *, names=None, generator="scripts/dump_tensors.py"):
    """Build (and write to `path`, if given) the dump {"tensors": [...]}.

    tensors: a dict {declared tensor name: a tensor, or a list of tensors (instance 0, 1, ...)}; an
             instance may itself be a dict {view name: tensor};
             or a list of tensors with `names` either one name (the list is its instances; default
             "kv_cache") or one name per tensor (instances numbered per name, in order).
    Returns the dump as a dict.
    """
    records = []
    if isinstance(tensors, dict):
        for name, value in tensors.items():
            instances = value if isinstance(value, (list, tuple)) else [value]
            for i, v in enumerate(instances):
                records += _instance_records(name, i, v)
    else:
        tensors = list(tensors)
        if names is None or isinstance(names, str):
            per_tensor = [names or "kv_cache"] * len(tensors)
        else:
            per_tensor = list(names)
            if len(per_tensor) != len(tensors):
                raise ValueError("%d names for %d tensors" % (len(per_tensor), len(tensors)))
        counts = {}
        for name, t in zip(per_tensor, tensors):
            records += _instance_records(name, counts.get(name, 0), t)
            counts[name] = counts.get(name, 0) + 1
    dump = {"generator": generator, "tensors": records}
    if path is not None:
        with open(path, "w") as f:
            f.write(_format(dump))
    return dump


def _demo(path):
    """vLLM's FlashAttention NHD cache on kvlayout's `small` cache shape, as numpy arrays (or RawTensors
    when numpy is absent): per layer one allocation of (2, num_blocks, block_size, num_kv_heads, head_size)
    bf16 elements, viewed from raw bytes as vLLM does (int8 buffer -> .view(dtype) -> .view(shape))."""
    layers, blocks, block_size, heads, head_size = 2, 5, 16, 4, 16
    shape = (2, blocks, block_size, heads, head_size)
    try:
        import numpy as np
        caches = [np.zeros(_product(shape) * 2, dtype=np.uint8).view(np.uint16).reshape(shape) for _ in range(layers)]
    except ImportError:
        stride = [blocks * block_size * heads * head_size, block_size * heads * head_size, heads * head_size, head_size, 1]
        nbytes = _product(shape) * 2
        caches = [RawTensor(shape, stride, "uint16", 2, 0x7F0000000000 + l * nbytes, 0, nbytes) for l in range(layers)]
    dump = dump_tensors({"kv_cache": caches}, path)
    print("wrote %d record(s) to %s; check them with:" % (len(dump["tensors"]), path))
    print("  kvlayout check vllm-flash-nhd --cache small --tensors %s" % path)


if __name__ == "__main__":
    _demo(sys.argv[1] if len(sys.argv) > 1 else "dump.json")

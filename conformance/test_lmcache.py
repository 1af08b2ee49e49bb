"""LMCache 0.5.6: its own memory objects, allocated and written on CPU, against the lmcache056-* declarations.

A memory object is what LMCache stores per chunk. For each declaration the test runs LMCache's own code:
  - shape: the shape LMCache computes for the chunk (LMCacheMetadata.get_shapes over the KVLayerGroupsManager
    LMCache builds from the engine's caches, a connector's get_shape, or the multiprocess cache context's
    get_kernel_group_shape_dtype);
  - allocation: MixedMemoryAllocator (the allocator of LocalCPUBackend and of the multiprocess L1 memory
    manager), with the format tag LMCache passes; the object under test never starts at its pool's first byte;
  - geometry: the object's tensor, re-based on the object's own block of the pool (meta.address, phy_size), is
    dumped and checked with `kvlayout check LAYOUT --tensors DUMP`;
  - bytes: the engine's paged cache (vLLM flash NHD, vLLM MLA, vLLM fused K/V, SGLang MHA; built here in the
    engine's shape) holds a distinct 16-bit pattern per logical position, LMCache's own store path copies it into
    the object, and every element is read back through the declaration's address function.
The store paths run LMCache's torch device ops, the kernels its "cpu" device backend resolves to (the XPU backend
inherits the same ones; on CUDA the compiled cuda_ops kernels run instead and are not exercised here):
  - in-process: device_ops.multi_layer_kv_transfer with the arguments VLLMPagedMemGPUConnectorV2.from_gpu passes,
    device_ops.multi_layer_kv_transfer_unilateral with SGLangGPUConnector.from_gpu's (both from_gpu methods
    assert a CUDA device before the copy, so the copy is called as they call it);
  - layerwise: the connectors' own batched_from_gpu generators (VLLMPagedMemLayerwiseGPUConnector,
    VLLMBufferLayerwiseGPUConnector, SGLangLayerwiseGPUConnector) with use_gpu=True, whose staging buffer
    GPUMemoryAllocator puts on the CPU when no accelerator is present;
  - multiprocess: CPUCacheContext over CpuShmTensorWrapper-wrapped caches and
    object_group_transfer.transfer_kv_per_object_group (LMCache's CPU-only MP server path).
Runs with CUDA_VISIBLE_DEVICES="" (conformance/run.sh sets it): LMCache then picks its "cpu" device backend.
Every LMCache module used here imports on the CPU as it is (lmcache.cuda_ops is never imported; no sys.modules
stubs). The one stand-in: the vLLM connectors create CUDA streams, so while they run torch.cuda's stream API is
replaced by a no-op (_host_streams); no data passes through it.
"""
import contextlib
import ctypes
import importlib.metadata
import warnings
from unittest import mock

import numpy as np
import pytest
import torch

import harness

import lmcache  # noqa: E402  (an engine that does not import fails the suite)
from lmcache import device_ops  # noqa: E402
from lmcache.utils import EngineType  # noqa: E402
from lmcache.v1.gpu_connector.gpu_connectors import (  # noqa: E402
    SGLangGPUConnector,
    SGLangLayerwiseGPUConnector,
    VLLMBufferLayerwiseGPUConnector,
    VLLMPagedMemGPUConnectorV2,
    VLLMPagedMemLayerwiseGPUConnector,
)
from lmcache.v1.gpu_connector.utils import (  # noqa: E402
    get_block_size,
    get_device,
    get_group_data_ptrs,
    get_head_size,
    get_num_blocks,
    get_page_buffer_size,
    normalize_and_discover_per_layer_formats,
    normalize_kv_and_discover_format,
    resolve_block_stride_and_log_layout,
)
from lmcache.v1.kv_layer_groups import KVLayerGroupsManager  # noqa: E402
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator  # noqa: E402
from lmcache.v1.memory_management import MemoryFormat  # noqa: E402
from lmcache.v1.metadata import LMCacheMetadata  # noqa: E402
from lmcache.v1.multiprocess.object_group_transfer import transfer_kv_per_object_group  # noqa: E402
from lmcache.v1.platform.devices.cpu.cache_context import CPUCacheContext  # noqa: E402
from lmcache.v1.platform.devices.cpu.shm import CpuShmTensorWrapper  # noqa: E402
import lmcache.lmcache_native as lmcache_native  # noqa: E402

D2H = lmcache_native.TransferDirection.D2H
VERSION = "0.5.6"

SMALL = {"num_layers": 2, "num_kv_heads": 4, "head_size": 16, "num_tokens": 67, "kv_lora_rank": 512,
         "qk_rope_head_dim": 64}
L, H, D, T = SMALL["num_layers"], SMALL["num_kv_heads"], SMALL["head_size"], SMALL["num_tokens"]
LATENT = SMALL["kv_lora_rank"] + SMALL["qk_rope_head_dim"]
DTYPE = torch.bfloat16
NHD = {"kv_layout": "NHD"}  # on a CPU host LMCache's vLLM detector assumes HND (vLLM's CPU backend) unless told

# Engine paging: blocks handed to the sequence in a non-identity order (block 0, vLLM's null block, unused).
BLOCK_SIZE, NUM_BLOCKS, BLOCK_TABLE = 16, 6, [3, 1, 5, 2, 4]           # 67 tokens: 4 full blocks and 3 tokens
# MLA: 2 x T x 576 positions must stay below harness.PATTERN_LIMIT, so fewer tokens (and smaller blocks).
MLA_TOKENS, MLA_BLOCK_SIZE, MLA_NUM_BLOCKS, MLA_BLOCK_TABLE = 27, 8, 5, [3, 1, 4, 2]  # 3 full blocks and 3 tokens
# SGLang's token pool: more slots than the sequence (its layerwise connector sizes its staging buffer by the pool).
SGLANG_POOL_SLOTS = 4 * T
# Multiprocess mode stores whole chunks of whole blocks: one chunk of 64 tokens (24 for MLA).
MP_TOKENS, MLA_MP_TOKENS = 64, 24

POOL_BYTES = 8 << 20
MLA_PARAMS = {"num_tokens": MLA_TOKENS}


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------

class _HostStream:
    """Stands in for torch.cuda.Stream on a host without a CUDA driver. LMCache's vLLM connectors create two
    streams in __init__ and the layerwise ones order their copies with them (torch.cuda.stream, current_stream,
    wait_stream, synchronize); on the CPU every copy is synchronous, so there is nothing to order. No data goes
    through it and it takes no part in the layout."""

    def __init__(self, *args, **kwargs):
        pass

    def wait_stream(self, other):
        pass

    def synchronize(self):
        pass


@contextlib.contextmanager
def _host_streams():
    """torch.cuda's stream API replaced by _HostStream while an LMCache connector runs on the CPU; the copies
    themselves are LMCache's (device_ops) and torch's, untouched."""
    with mock.patch.object(torch.cuda, "Stream", _HostStream), \
            mock.patch.object(torch.cuda, "current_stream", lambda *a, **k: _HostStream()), \
            mock.patch.object(torch.cuda, "stream", lambda *a, **k: contextlib.nullcontext()), \
            mock.patch.object(torch.cuda, "synchronize", lambda *a, **k: None):
        yield


def _bf16(bits):
    return torch.from_numpy(np.ascontiguousarray(bits).astype(np.int16)).view(DTYPE)


def _slots(num_tokens, block_table, block_size):
    tokens = np.arange(num_tokens)
    blocks = np.asarray([block_table[t // block_size] for t in tokens])
    return torch.tensor(blocks), torch.tensor(tokens % block_size), torch.tensor(blocks * block_size + tokens % block_size)


class _Pool:
    """LMCache's host allocator (MixedMemoryAllocator, as LocalCPUBackend and the MP L1MemoryManager build it).
    A one-element object is allocated first, so every object under test starts one aligned block into the pool.
    Objects are released (ref_count_down) on exit."""

    def __init__(self):
        self.allocator = MixedMemoryAllocator(POOL_BYTES)
        self.objects = [self.allocator.allocate(torch.Size([1]), DTYPE, MemoryFormat.KV_2LTD)]
        assert self.objects[0].meta.address == 0

    def allocate(self, shapes, dtypes, fmt):
        obj = self.allocator.allocate(shapes, dtypes, fmt)
        assert obj is not None and obj.meta.address > 0
        self.objects.append(obj)
        return obj

    def batched_allocate(self, shapes, dtypes, batch_size, **kwargs):
        objs = self.allocator.batched_allocate(shapes, dtypes, batch_size, **kwargs)
        assert objs is not None and all(o.meta.address > 0 for o in objs)
        self.objects += objs
        return objs

    def close(self):
        for obj in self.objects:
            obj.ref_count_down()
        self.objects = []


@contextlib.contextmanager
def _pool():
    pool = _Pool()
    try:
        yield pool
    finally:
        pool.close()


def _allocation(obj, pool):
    """The object's tensor re-based on the object's own block of the pool, [pool + meta.address, + phy_size):
    same memory, shape, strides and element offset within the block. The declaration's instance is the memory
    object, not the pool (harness reads an instance's allocation from its storage's start)."""
    t = obj.tensor
    base = pool.allocator.buffer.data_ptr() + obj.meta.address
    size = obj.get_physical_size()
    offset = t.data_ptr() - base
    assert 0 <= offset and offset % t.element_size() == 0
    assert offset + t.numel() * t.element_size() <= size, "the tensor runs past its block"
    block = torch.frombuffer((ctypes.c_uint8 * size).from_address(base), dtype=torch.uint8).view(t.dtype)
    return block.as_strided(t.shape, t.stride(), offset // t.element_size())


def _metadata(caches, *, use_mla, chunk_size=256):
    """LMCacheMetadata as the vLLM adapter builds it after registering the caches: kv_shape (num_layer, 2 or 1,
    chunk_size, num_kv_head, head_size) and the KVLayerGroupsManager LMCache derives from the caches."""
    caches, formats = normalize_and_discover_per_layer_formats(caches, [], EngineType.VLLM, NHD)
    manager = KVLayerGroupsManager(list(caches), engine_kv_formats=formats, engine_group_infos=(),
                                   lmcache_tokens_per_chunk=chunk_size)
    kv_shape = (L, 1, chunk_size, 1, LATENT) if use_mla else (L, 2, chunk_size, H, D)
    return LMCacheMetadata(model_name="conformance", world_size=1, local_world_size=1, worker_id=0,
                           local_worker_id=0, kv_dtype=DTYPE, kv_shape=kv_shape, use_mla=use_mla,
                           chunk_size=chunk_size, kv_layer_groups_manager=manager)


# Engine caches holding the pattern (grid: uint16, [L, 2, T, H, D] or MLA [L, T, latent]).

def _vllm_flash(grid, block_table=BLOCK_TABLE, block_size=BLOCK_SIZE, num_blocks=NUM_BLOCKS):
    """vLLM FlashAttention, NHD: per layer [2, num_blocks, block_size, H, D] (specs/engines/vllm-flash-nhd.json)."""
    blocks, offsets, slots = _slots(grid.shape[2], block_table, block_size)
    caches = []
    for layer in range(grid.shape[0]):
        cache = torch.zeros(2, num_blocks, block_size, H, D, dtype=DTYPE)
        cache[:, blocks, offsets] = _bf16(grid[layer])
        caches.append(cache)
    return caches, slots


def _vllm_mla(grid, block_table=MLA_BLOCK_TABLE, block_size=MLA_BLOCK_SIZE, num_blocks=MLA_NUM_BLOCKS):
    """vLLM MLA: per layer [num_blocks, block_size, latent] (specs/engines/vllm-mla.json)."""
    blocks, offsets, slots = _slots(grid.shape[1], block_table, block_size)
    caches = []
    for layer in range(grid.shape[0]):
        cache = torch.zeros(num_blocks, block_size, LATENT, dtype=DTYPE)
        cache[blocks, offsets] = _bf16(grid[layer])
        caches.append(cache)
    return caches, slots


def _vllm_packed(grid, hnd, block_table=BLOCK_TABLE, block_size=BLOCK_SIZE, num_blocks=NUM_BLOCKS):
    """vLLM fused K/V: per layer [num_blocks, block_size, H, 2 * D] (NHD) or [num_blocks, H, block_size, 2 * D]
    (HND), each head's K then V in the last axis (specs/engines/vllm-packed-nhd.json / -hnd.json)."""
    blocks, offsets, slots = _slots(grid.shape[2], block_table, block_size)
    caches = []
    for layer in range(grid.shape[0]):
        rows = _bf16(np.concatenate([grid[layer, 0], grid[layer, 1]], axis=-1))  # [T, H, 2D]
        if hnd:
            cache = torch.zeros(num_blocks, H, block_size, 2 * D, dtype=DTYPE)
            cache[blocks, :, offsets] = rows
        else:
            cache = torch.zeros(num_blocks, block_size, H, 2 * D, dtype=DTYPE)
            cache[blocks, offsets] = rows
        caches.append(cache)
    return caches, slots


def _sglang_mha(grid, size=SGLANG_POOL_SLOTS):
    """SGLang MHATokenToKVPool: ([k_buffer per layer], [v_buffer per layer]), each [size + 1, H, D], slots from 1
    (slot 0 is SGLang's dummy; specs/engines/sglang-mha.json), the sequence's slots scattered over the pool."""
    num_tokens = grid.shape[2]
    slots = torch.tensor(1 + np.random.default_rng(56).permutation(size)[:num_tokens])
    k = [torch.zeros(size + 1, H, D, dtype=DTYPE) for _ in range(grid.shape[0])]
    v = [torch.zeros(size + 1, H, D, dtype=DTYPE) for _ in range(grid.shape[0])]
    for layer in range(grid.shape[0]):
        k[layer][slots] = _bf16(grid[layer, 0])
        v[layer][slots] = _bf16(grid[layer, 1])
    return (k, v), slots


def _heads_pattern(num_tokens):
    expected = harness.pattern(L * 2 * num_tokens * H * D)
    return expected, expected.reshape(L, 2, num_tokens, H, D)


def _latent_pattern(num_tokens):
    expected = harness.pattern(L * num_tokens * LATENT)
    return expected, expected.reshape(L, num_tokens, LATENT)


def _check(name, pool, objs, expected, params=None):
    """Geometry and bytes of one chunk's memory object(s) (one, or one per layer) against declaration `name`."""
    tensors = {"memory_object": [_allocation(o, pool) for o in objs]}
    harness.check_geometry(name, tensors, params=params)
    compared = harness.assert_pattern(name, tensors, expected, params=params)
    assert compared == expected.size


# ---------------------------------------------------------------------------------------------------------------
# Store paths
# ---------------------------------------------------------------------------------------------------------------

def _in_process_vllm(pool, caches, slots, num_tokens, *, use_mla):
    """The non-layerwise store (cache_engine.py LMCacheEngine.store): metadata.get_shapes(num_tokens), allocate
    with LocalCPUBackend.allocate's tag, then the copy VLLMPagedMemGPUConnectorV2.from_gpu makes, with the
    arguments its _initialize_pointers computes (the method itself asserts a CUDA device first)."""
    metadata = _metadata(caches, use_mla=use_mla)
    shapes, dtypes = metadata.get_shapes(num_tokens), metadata.get_dtypes()
    with _host_streams():  # V2's __init__ creates CUDA streams; get_shape is the connector's own shape
        connector = VLLMPagedMemGPUConnectorV2.from_metadata(metadata, use_gpu=False, device=torch.device("cpu"),
                                                            layout_hints=NHD)
    assert shapes == [connector.get_shape(num_tokens)], "LMCache's two shape sources disagree"
    fmt = MemoryFormat.KV_MLA_FMT if use_mla else MemoryFormat.KV_2LTD
    obj = pool.allocate(shapes, dtypes, fmt)

    engine_kv_format, kv = normalize_kv_and_discover_format(caches, EngineType.VLLM, layout_hints=NHD)
    pointers = torch.tensor([t.data_ptr() for t in kv], dtype=torch.int64)
    block_size = get_block_size(kv, engine_kv_format)
    device_ops.multi_layer_kv_transfer(
        obj.tensor, pointers, slots[0:num_tokens], kv[0].device,
        get_num_blocks(kv, engine_kv_format) * block_size, D2H, engine_kv_format,
        block_size=block_size, head_size=get_head_size(kv, engine_kv_format),
        block_stride_elems=resolve_block_stride_and_log_layout(kv, engine_kv_format, layer_idx=0, group_idx=0) or 0)
    if use_mla:
        obj.metadata.fmt = MemoryFormat.KV_MLA_FMT  # as from_gpu sets it
    return obj


def _in_process_sglang(pool, kvcaches, slots, num_tokens):
    """SGLang's non-layerwise store: SGLangGPUConnector.get_shape, then the copy its from_gpu makes
    (multi_layer_kv_transfer_unilateral over K pointers then V pointers)."""
    connector = SGLangGPUConnector(H * D, L, use_gpu=False)
    obj = pool.allocate(connector.get_shape(num_tokens), DTYPE, MemoryFormat.KV_2LTD)
    engine_kv_format, kv = normalize_kv_and_discover_format(kvcaches, EngineType.SGLANG)
    pointers = torch.tensor(get_group_data_ptrs(kv, engine_kv_format, list(range(L))), dtype=torch.int64)
    with warnings.catch_warnings():  # _initialize_pointers makes the same call, deprecated for the MP path only
        warnings.simplefilter("ignore", DeprecationWarning)
        page_buffer_size = get_page_buffer_size(kv, engine_kv_format)
    device_ops.multi_layer_kv_transfer_unilateral(
        obj.tensor, pointers, slots[0:num_tokens], get_device(kv), page_buffer_size, D2H, engine_kv_format)
    return obj


def _multiprocess(pool, caches, block_table, chunk_tokens, layout_hints=NHD):
    """LMCache's multiprocess server on a CPU-only host: the engine's caches migrated to POSIX shared memory
    (CpuShmTensorWrapper.wrap, the "cpu" KV wrapper factory), CPUCacheContext over them, the object's
    (shape, dtype) per kernel group as lmcache_driven_transfer.get_layout_desc takes it, allocation as
    L1MemoryManager.allocate does it (batched_allocate, no format: the KV_2LTD default), and the store copy
    transfer_kv_per_object_group (D2H). Returns the object."""
    values = [c.clone() for c in caches]
    wrapped = [CpuShmTensorWrapper.wrap(c) for c in caches]  # re-points each cache at its SHM segment
    for cache, value in zip(caches, values):
        cache.copy_(value)  # the engine writes its KV after registration
    context = CPUCacheContext(wrapped, lmcache_tokens_per_chunk=chunk_tokens, layout_hints=layout_hints)
    kernel_groups = context.kv_layer_groups_manager.object_groups[0].kernel_group_indices
    shapes_dtypes = [context.get_kernel_group_shape_dtype(chunk_tokens, g) for g in kernel_groups]
    [obj] = pool.batched_allocate([s for s, _ in shapes_dtypes], [d for _, d in shapes_dtypes], 1)
    assert obj.meta.fmt == MemoryFormat.KV_2LTD
    block_ids = block_table[:context.calculate_num_blocks(chunk_tokens, 0)]
    transfer_kv_per_object_group(context, [torch.tensor(block_ids, dtype=torch.long)], [obj], 0, 1, 0, D2H,
                                 transfer_key="conformance", block_ids_host=[block_ids])
    context.close()
    return obj


def _layerwise(connector, pool, fmt, num_tokens, **kwargs):
    """The layerwise store (cache_engine.py LMCacheEngine.store_layer): num_layers objects of
    gpu_connector.get_shape(num_tokens) in one batched_allocate, then the connector's batched_from_gpu generator
    run to its end with memory_objs[layer][chunk]."""
    objs = pool.batched_allocate(connector.get_shape(num_tokens), DTYPE, batch_size=L, fmt=fmt)
    for _ in connector.batched_from_gpu([[o] for o in objs], [0], [num_tokens], **kwargs):
        pass
    return objs


# ---------------------------------------------------------------------------------------------------------------
# One handler per declaration (also run on the commit-pinned declarations, below)
# ---------------------------------------------------------------------------------------------------------------

def _check_2ltd(name):
    expected, grid = _heads_pattern(T)
    with _pool() as pool:
        caches, slots = _vllm_flash(grid)
        _check(name, pool, [_in_process_vllm(pool, caches, slots, T, use_mla=False)], expected)
        kvcaches, slots = _sglang_mha(grid)
        _check(name, pool, [_in_process_sglang(pool, kvcaches, slots, T)], expected)

    expected, grid = _heads_pattern(MP_TOKENS)
    with _pool() as pool:
        caches, _ = _vllm_flash(grid)
        _check(name, pool, [_multiprocess(pool, caches, BLOCK_TABLE, MP_TOKENS)], expected,
               params={"num_tokens": MP_TOKENS})


def _check_mla(name):
    expected, grid = _latent_pattern(MLA_TOKENS)
    with _pool() as pool:
        caches, slots = _vllm_mla(grid)
        _check(name, pool, [_in_process_vllm(pool, caches, slots, MLA_TOKENS, use_mla=True)], expected,
               params=MLA_PARAMS)

    expected, grid = _latent_pattern(MLA_MP_TOKENS)
    with _pool() as pool:
        caches, _ = _vllm_mla(grid)
        _check(name, pool, [_multiprocess(pool, caches, MLA_BLOCK_TABLE, MLA_MP_TOKENS)], expected,
               params={"num_tokens": MLA_MP_TOKENS})


def _check_packed(name):
    expected, grid = _heads_pattern(MP_TOKENS)
    for hnd in (False, True):
        with _pool() as pool:
            caches, _ = _vllm_packed(grid, hnd)
            obj = _multiprocess(pool, caches, BLOCK_TABLE, MP_TOKENS, layout_hints={"kv_layout": "HND" if hnd else "NHD"})
            _check(name, pool, [obj], expected, params={"num_tokens": MP_TOKENS})


def _check_t2d(name):
    expected, grid = _heads_pattern(T)
    with _pool() as pool:
        caches, slots = _vllm_flash(grid)
        metadata = _metadata(caches, use_mla=False)
        with _host_streams():
            connector = VLLMPagedMemLayerwiseGPUConnector.from_metadata(
                metadata, use_gpu=True, device=torch.device("cpu"), layout_hints=NHD)
            objs = _layerwise(connector, pool, MemoryFormat.KV_T2D, T, kvcaches=caches, slot_mapping=slots, sync=True)
        _check(name, pool, objs, expected)

        kvcaches, slots = _sglang_mha(grid)
        connector = SGLangLayerwiseGPUConnector(H * D, L, use_gpu=True, chunk_size=256, dtype=DTYPE,
                                                device=torch.device("cpu"))
        objs = _layerwise(connector, pool, MemoryFormat.KV_T2D, T, kvcaches=kvcaches, slot_mapping=slots, sync=True)
        _check(name, pool, objs, expected)


def _check_2td(name):
    expected, grid = _heads_pattern(T)
    with _pool() as pool:
        caches, slots = _vllm_flash(grid)
        metadata = _metadata(caches, use_mla=False)
        with _host_streams():
            connector = VLLMBufferLayerwiseGPUConnector.from_metadata(
                metadata, use_gpu=True, device=torch.device("cpu"), layout_hints=NHD)
            objs = _layerwise(connector, pool, MemoryFormat.KV_2TD, T, kvcaches=caches, slot_mapping=slots)
        _check(name, pool, objs, expected)


def _check_mla_layerwise(name):
    expected, grid = _latent_pattern(MLA_TOKENS)
    with _pool() as pool:
        caches, slots = _vllm_mla(grid)
        metadata = _metadata(caches, use_mla=True)
        with _host_streams():
            connector = VLLMPagedMemLayerwiseGPUConnector.from_metadata(
                metadata, use_gpu=True, device=torch.device("cpu"), layout_hints=NHD)
            objs = _layerwise(connector, pool, MemoryFormat.KV_MLA_FMT, MLA_TOKENS, kvcaches=caches,
                              slot_mapping=slots, sync=True)
        _check(name, pool, objs, expected, params=MLA_PARAMS)


HANDLERS = {
    "lmcache056-2ltd": _check_2ltd,
    "lmcache056-mla": _check_mla,
    "lmcache056-packed": _check_packed,
    "lmcache056-t2d": _check_t2d,
    "lmcache056-2td": _check_2td,
    "lmcache056-mla-layerwise": _check_mla_layerwise,
}


def test_lmcache_runs_on_its_cpu_backend():
    assert importlib.metadata.version("lmcache") == VERSION
    assert lmcache.torch_device_type == "cpu", "run with CUDA_VISIBLE_DEVICES= (conformance/run.sh sets it)"
    for name in harness.observed_by(__file__):
        assert harness.declaration(name)["observed"]["package"] == f"lmcache=={VERSION}"


def test_every_observed_declaration_has_a_handler():
    assert set(HANDLERS) == set(harness.observed_by(__file__))


@pytest.mark.parametrize("name", harness.observed_by(__file__))
def test_engine_agrees(name):
    HANDLERS[name](name)


@pytest.mark.parametrize("name, check", [("lmcache-2ltd", _check_2ltd), ("lmcache-mla", _check_mla)],
                         ids=["lmcache-2ltd", "lmcache-mla"])
def test_commit_pinned_declaration_describes_the_release(name, check):
    """The commit-pinned declarations (LMCache@004446a0) against 0.5.6's objects, through the same paths."""
    check(name)


def test_a_wrong_declaration_is_caught():
    """Control: the fused-K/V object (KV_2LTD's tag and element count, K and V interleaved per head) read through
    lmcache056-2ltd fails the geometry check, and its bytes disagree."""
    expected, grid = _heads_pattern(MP_TOKENS)
    params = {"num_tokens": MP_TOKENS}
    with _pool() as pool:
        caches, _ = _vllm_packed(grid, hnd=False)
        tensors = {"memory_object": [_allocation(_multiprocess(pool, caches, BLOCK_TABLE, MP_TOKENS), pool)]}
        with pytest.raises(AssertionError, match="GEOMETRY_MISMATCH|shape"):
            harness.check_geometry("lmcache056-2ltd", tensors, params=params)
        with pytest.raises(AssertionError, match="positions disagree"):
            harness.assert_pattern("lmcache056-2ltd", tensors, expected, params=params)


def test_token_dim_of_the_layerwise_tags_is_not_their_token_axis():
    """Recorded in the declarations' notes: MemoryFormat.token_dim() (TensorMemoryObj.get_num_tokens) does not
    fit the shapes the layerwise connectors store under the same tags in 0.5.6."""
    with _pool() as pool:
        t2d = pool.allocate(torch.Size([T, 2, H * D]), DTYPE, MemoryFormat.KV_T2D)
        two_td = pool.allocate(torch.Size([2, T, H * D]), DTYPE, MemoryFormat.KV_2TD)
        mla = pool.allocate(torch.Size([MLA_TOKENS, LATENT]), DTYPE, MemoryFormat.KV_MLA_FMT)
        assert t2d.get_num_tokens() == 2      # token_dim() 1: the K/V axis of [T, 2, D]
        assert two_td.get_num_tokens() == 2   # token_dim() 0: the K/V axis of [2, T, D]
        with pytest.raises(IndexError):
            mla.get_num_tokens()              # token_dim() 2 of a 2-D [T, latent] object

"""SGLang 0.5.23's own KV pools, run on the CPU, against the sglang0523-* declarations.

Each handler builds the pool with SGLang's class (sglang==0.5.23, conformance/requirements/sglang.txt), then
  geometry: dumps the tensors SGLang holds and runs `kvlayout check LAYOUT --tensors DUMP`;
  bytes:    writes one distinct 16-bit pattern per logical position through SGLang's own code and reads every
            position back through the declaration (`kvlayout addr LAYOUT --all --json`).

Write paths. Device pools: MHATokenToKVPool.set_kv_buffer / MLATokenToKVPool.set_kv_buffer (on the CPU both are
plain torch index_put: `k_cache[loc] = k`, or the HND scatter `k_buf[loc // page_size, :, loc % page_size, :]`).
Host (HiCache) pools: their device<->host copies are sgl_kernel / JIT CUDA kernels, bound only on CUDA, ROCm and
XPU (pool_host/mha.py imports them under `if _is_cuda or _is_hip`), so on the CPU the test writes the host buffer
through the host pool's own indexing helpers instead:
  - the per-layer views the host pool builds for its transfer kernels (`k_data_refs[l]` / `v_data_refs[l]`, MLA
    `data_refs[l]`, whose pointers make k_data_ptrs / data_ptrs): token rows for layer_first and page_first,
    (page, token in page) for MHA page_first_direct;
  - `set_from_flat_data_page(index, page)`, the L3 storage load path (cache_controller, the storage backends), for
    page_head and MLA page_first_direct, the page built in the order its reshape names.

sglang0523-mha-tp is observed for geometry only: every rank's pool, with the head count ModelConfig.get_num_kv_heads
gives it; which heads a rank holds is decided by QKVParallelLinear's weight loading under torch.distributed process
groups, which this test does not start.

Slots: the device pages come from SGLang's PagedTokenToKVPoolAllocator (pages 1..num_pages: page 0 is the dummy
page), the host pages from the host pool's own allocator (slots from 0); the test assigns them to tokens in a
non-identity order and passes that order to the declaration as its page table.
"""
import math
import os

# SGLang picks its kernels at import (is_cuda() = torch.cuda.is_available()): the CPU torch paths are taken only
# when no GPU is visible. conformance/run.sh sets this too.
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

import harness

PACKAGE = "sglang==0.5.23"
CACHE = "small"  # 2 layers, 4 KV heads, head_size 16, 67 tokens; MLA 512 + 64
LAYERS, HEADS, HEAD_SIZE, TOKENS = 2, 4, 16, 67
KV_LORA_RANK, ROPE_DIM = 512, 64
PAGE_SIZE = 16  # 67 tokens: 5 pages, the last one partial
# MLA: 2 layers x 576 latents leave room for 27 tokens of distinct 16-bit patterns (harness.pattern's limit).
MLA_TOKENS, MLA_PAGE_SIZE = 27, 8


@pytest.fixture(scope="module")
def sgl():
    """SGLang's pool modules (imported once: about 10 s)."""
    import torch

    if torch.cuda.is_available():
        pytest.fail("run with CUDA_VISIBLE_DEVICES= : SGLang must take its CPU torch paths (conformance/run.sh sets it)")
    from sglang.srt.configs import model_config
    from sglang.srt.mem_cache import memory_pool
    from sglang.srt.mem_cache.allocator import paged
    from sglang.srt.mem_cache.hybrid_cache import hybrid_pool_assembler
    from sglang.srt.mem_cache.pool_host import mla as host_mla
    from sglang.srt.runtime_context import get_parallel

    class NS:
        pass

    ns = NS()
    ns.torch = torch
    ns.MHATokenToKVPool = memory_pool.MHATokenToKVPool
    ns.MLATokenToKVPool = memory_pool.MLATokenToKVPool
    ns.PagedTokenToKVPoolAllocator = paged.PagedTokenToKVPoolAllocator
    ns.mha_host_inputs = hybrid_pool_assembler._mha_host_inputs
    ns.MLATokenToKVPoolHost = host_mla.MLATokenToKVPoolHost
    ns.get_parallel = get_parallel
    ns.ModelConfig = model_config.ModelConfig
    return ns


class _Layer:
    """What set_kv_buffer reads of its RadixAttention argument: layer_id."""

    def __init__(self, layer_id):
        self.layer_id = layer_id


def _order(n):
    """A fixed non-identity order of n items (every other one, then the rest, reversed)."""
    return list(reversed(list(range(0, n, 2)) + list(range(1, n, 2))))


def _bf16(torch, values):
    """uint16 patterns as a bf16 tensor holding exactly those bits."""
    return torch.from_numpy(np.ascontiguousarray(values).astype(np.int16)).view(torch.bfloat16)


def _kv_pattern():
    expected = harness.pattern(LAYERS * 2 * TOKENS * HEADS * HEAD_SIZE)
    return expected, expected.reshape(LAYERS, 2, TOKENS, HEADS, HEAD_SIZE)


def _mla_pattern():
    expected = harness.pattern(LAYERS * MLA_TOKENS * (KV_LORA_RANK + ROPE_DIM))
    return expected, expected.reshape(LAYERS, MLA_TOKENS, KV_LORA_RANK + ROPE_DIM)


def _device_pages(sgl, kvcache, size, page_size):
    """The pages SGLang's paged allocator hands out, one alloc of a page at a time, until it is empty."""
    allocator = sgl.PagedTokenToKVPoolAllocator(size, page_size, sgl.torch.bfloat16, "cpu", kvcache, need_sort=False)
    pages = []
    while (slots := allocator.alloc(page_size)) is not None:
        assert slots.tolist() == list(range(int(slots[0]), int(slots[0]) + page_size))
        pages.append(int(slots[0]) // page_size)
    return pages


def _host_pages(host):
    """The pages the host pool's allocator hands out (slot // page_size of each page-sized alloc)."""
    pages = []
    while (slots := host.alloc(host.page_size)) is not None:
        pages.append(int(slots[0]) // host.page_size)
    return pages


def _mha_device_pool(sgl, monkeypatch, *, hnd, page_size=PAGE_SIZE):
    num_pages = math.ceil(TOKENS / page_size)
    if hnd:
        monkeypatch.setenv("SGLANG_USE_HND_KVCACHE", "1")
    else:
        monkeypatch.delenv("SGLANG_USE_HND_KVCACHE", raising=False)
    pool = sgl.MHATokenToKVPool(size=num_pages * page_size, page_size=page_size, dtype=sgl.torch.bfloat16,
                                head_num=HEADS, head_dim=HEAD_SIZE, layer_num=LAYERS, device="cpu",
                                enable_memory_saver=False)
    assert pool.kv_cache_layout == ("hnd" if hnd else "nhd")
    return pool, num_pages


def _device_mha(layout, sgl, monkeypatch, *, hnd):
    for page_size in (1, PAGE_SIZE):  # SGLang's default page size (ServerArgs page_size None -> 1), and pages of 16
        _device_mha_pages(layout, sgl, monkeypatch, hnd=hnd, page_size=page_size)
    return ["geometry", "bytes"]


def _device_mha_pages(layout, sgl, monkeypatch, *, hnd, page_size):
    torch = sgl.torch
    pool, num_pages = _mha_device_pool(sgl, monkeypatch, hnd=hnd, page_size=page_size)
    pages = _device_pages(sgl, pool, pool.size, page_size)
    assert sorted(pages) == list(range(1, num_pages + 1)), f"SGLang handed out pages {pages}"
    page_table = [pages[i] for i in _order(num_pages)]
    params = {"page_size": page_size}
    # SGLang keeps the per-layer allocation only as its two halves, k_buffer[l] and v_buffer[l].
    tensors = {"kv_buffer": [{"k_buffer": pool.k_buffer[l], "v_buffer": pool.v_buffer[l]} for l in range(LAYERS)]}
    harness.check_geometry(layout, tensors, cache=CACHE, params=params)

    expected, e = _kv_pattern()
    loc = torch.tensor([page_table[t // page_size] * page_size + t % page_size for t in range(TOKENS)])
    for l in range(LAYERS):
        pool.set_kv_buffer(_Layer(l), loc, _bf16(torch, e[l, 0]), _bf16(torch, e[l, 1]))
    # The byte check reads each instance's whole allocation from its start: k_buffer[l] stands for it (v_buffer[l]
    # is a view of the same storage). harness.read_back takes one tensor per instance, not the {view: tensor} form.
    allocations = {"kv_buffer": [pool.k_buffer[l] for l in range(LAYERS)]}
    assert all(pool.v_buffer[l].untyped_storage().data_ptr() == pool.k_buffer[l].untyped_storage().data_ptr()
               for l in range(LAYERS))
    harness.assert_pattern(layout, allocations, expected, cache=CACHE, params=params,
                           tables={"page_table": page_table})


def _device_mla(layout, sgl, monkeypatch):
    for page_size in (1, MLA_PAGE_SIZE):
        _device_mla_pages(layout, sgl, page_size)
    return ["geometry", "bytes"]


def _device_mla_pages(layout, sgl, page_size):
    torch = sgl.torch
    num_pages = math.ceil(MLA_TOKENS / page_size)
    pool = sgl.MLATokenToKVPool(size=num_pages * page_size, page_size=page_size, dtype=torch.bfloat16,
                                kv_lora_rank=KV_LORA_RANK, qk_rope_head_dim=ROPE_DIM, layer_num=LAYERS,
                                device="cpu", enable_memory_saver=False)
    pages = _device_pages(sgl, pool, pool.size, page_size)
    assert sorted(pages) == list(range(1, num_pages + 1)), f"SGLang handed out pages {pages}"
    page_table = [pages[i] for i in _order(num_pages)]
    params = {"page_size": page_size, "num_tokens": MLA_TOKENS}
    tensors = {"kv_buffer": list(pool.kv_buffer)}
    harness.check_geometry(layout, tensors, cache=CACHE, params=params)

    expected, e = _mla_pattern()
    loc = torch.tensor([page_table[t // page_size] * page_size + t % page_size for t in range(MLA_TOKENS)])
    # set_kv_buffer asserts the write is not DCP-widened; with no parallel config published the width is unknown,
    # so the test states it (decode context parallelism off), as SGLang's own override API provides.
    with sgl.get_parallel().override(dcp_enabled=False):
        for l in range(LAYERS):
            pool.set_kv_buffer(_Layer(l), loc, _bf16(torch, e[l][:, None, :]), None)
    harness.assert_pattern(layout, tensors, expected, cache=CACHE, params=params, tables={"page_table": page_table})


def _device_mha_tp(layout, sgl, monkeypatch):
    """Every rank's pool of a TP group, built with the head count SGLang gives it (geometry only: which heads a rank
    holds is QKVParallelLinear's weight loading under torch.distributed process groups, not run here)."""
    from types import SimpleNamespace

    num_pages = math.ceil(TOKENS / PAGE_SIZE)
    monkeypatch.delenv("SGLANG_USE_HND_KVCACHE", raising=False)
    for tp_size in (2, 4, 8):  # partitioned heads (2, 4) and replicated heads (8 > 4 KV heads)
        # ModelConfig.get_num_kv_heads, called on a stand-in for a model whose config has HEADS KV heads.
        model = SimpleNamespace(get_total_num_kv_heads=lambda: HEADS, is_draft_model=False)
        heads = sgl.ModelConfig.get_num_kv_heads(model, tp_size)
        for tp_rank in range(tp_size):
            pool = sgl.MHATokenToKVPool(size=num_pages * PAGE_SIZE, page_size=PAGE_SIZE, dtype=sgl.torch.bfloat16,
                                        head_num=heads, head_dim=HEAD_SIZE, layer_num=LAYERS, device="cpu",
                                        enable_memory_saver=False)
            tensors = {"kv_buffer": [{"k_buffer": pool.k_buffer[l], "v_buffer": pool.v_buffer[l]} for l in range(LAYERS)]}
            harness.check_geometry(layout, tensors, cache=CACHE,
                                   params={"page_size": PAGE_SIZE, "tp_size": tp_size, "tp_rank": tp_rank})
    return ["geometry"]


def _host_mha(layout, sgl, monkeypatch, *, mem_layout):
    torch = sgl.torch
    device_pool, _ = _mha_device_pool(sgl, monkeypatch, hnd=False)
    # As hybrid_pool_assembler._build_mha_mla_host_pool builds it, sized from --hicache-ratio 1, except
    # pin_memory=False: pinning is cudaHostRegister, which needs CUDA and leaves the layout alone.
    host_cls, buffer_info, kwargs = sgl.mha_host_inputs(device_pool)
    host = host_cls(buffer_info, host_to_device_ratio=1.0, host_size=0, page_size=PAGE_SIZE, layout=mem_layout,
                    pin_memory=False, allocator_type="default", **kwargs)
    pages = _host_pages(host)
    assert sorted(pages) == list(range(host.page_num)), f"the host allocator handed out pages {pages}"
    host_page_table = [pages[i] for i in _order(host.page_num)]
    params = {"page_size": PAGE_SIZE, "num_pages": host.page_num}
    tensors = {"kv_buffer": host.kv_buffer}
    harness.check_geometry(layout, tensors, cache=CACHE, params=params)

    expected, e = _kv_pattern()
    slots = torch.tensor([host_page_table[t // PAGE_SIZE] * PAGE_SIZE + t % PAGE_SIZE for t in range(TOKENS)])
    if mem_layout in ("layer_first", "page_first"):
        # Per-layer (slot, head, dim) views: what the JIT transfer kernels get as per-layer pointers.
        for l in range(LAYERS):
            host.k_data_refs[l][slots] = _bf16(torch, e[l, 0])
            host.v_data_refs[l][slots] = _bf16(torch, e[l, 1])
    elif mem_layout == "page_first_direct":
        # Per-layer (page, token in page, head, dim) views.
        for l in range(LAYERS):
            host.k_data_refs[l][slots // PAGE_SIZE, slots % PAGE_SIZE] = _bf16(torch, e[l, 0])
            host.v_data_refs[l][slots // PAGE_SIZE, slots % PAGE_SIZE] = _bf16(torch, e[l, 1])
    elif mem_layout == "page_head":
        # The L3 load path: one flat page per host page, in the order set_from_flat_data_page reshapes it to,
        # (2, 1, head_num, page_size, layer_num, head_dim).
        for block in range(math.ceil(TOKENS / PAGE_SIZE)):
            tokens = range(block * PAGE_SIZE, min(TOKENS, (block + 1) * PAGE_SIZE))
            page = np.zeros((2, 1, HEADS, PAGE_SIZE, LAYERS, HEAD_SIZE), dtype=np.uint16)
            # e[layer, kv, token, head, dim] -> page[kv, 0, head, token in page, layer, dim]
            page[:, 0, :, : len(tokens)] = e[:, :, tokens.start : tokens.stop].transpose(1, 3, 2, 0, 4)
            host.set_from_flat_data_page(host_page_table[block] * PAGE_SIZE, _bf16(torch, page).flatten())
    else:
        raise AssertionError(mem_layout)
    harness.assert_pattern(layout, tensors, expected, cache=CACHE, params=params,
                           tables={"host_page_table": host_page_table})
    return ["geometry", "bytes"]


def _host_mla(layout, sgl, monkeypatch, *, mem_layout):
    torch = sgl.torch
    num_pages = math.ceil(MLA_TOKENS / MLA_PAGE_SIZE)
    device_pool = sgl.MLATokenToKVPool(size=num_pages * MLA_PAGE_SIZE, page_size=MLA_PAGE_SIZE, dtype=torch.bfloat16,
                                       kv_lora_rank=KV_LORA_RANK, qk_rope_head_dim=ROPE_DIM, layer_num=LAYERS,
                                       device="cpu", enable_memory_saver=False)
    # As hybrid_pool_assembler._build_mha_mla_host_pool builds it (pin_memory=False: see _host_mha).
    host = sgl.MLATokenToKVPoolHost(device_pool.get_device_pool_infos()[0].buffer_info, host_to_device_ratio=1.0,
                                    host_size=0, page_size=MLA_PAGE_SIZE, layout=mem_layout, pin_memory=False,
                                    allocator_type="default", device_capacity_tokens=device_pool.size,
                                    start_layer=device_pool.start_layer, end_layer=device_pool.end_layer,
                                    target_layer_num=device_pool.layer_num,
                                    override_kv_cache_dim=device_pool.kv_cache_dim)
    pages = _host_pages(host)
    assert sorted(pages) == list(range(host.page_num)), f"the host allocator handed out pages {pages}"
    host_page_table = [pages[i] for i in _order(host.page_num)]
    params = {"page_size": MLA_PAGE_SIZE, "num_pages": host.page_num, "num_tokens": MLA_TOKENS}
    tensors = {"kv_buffer": host.kv_buffer}
    harness.check_geometry(layout, tensors, cache=CACHE, params=params)

    expected, e = _mla_pattern()
    slots = torch.tensor([host_page_table[t // MLA_PAGE_SIZE] * MLA_PAGE_SIZE + t % MLA_PAGE_SIZE
                          for t in range(MLA_TOKENS)])
    if mem_layout in ("layer_first", "page_first"):
        # Per-layer (slot, 1, latent) views: what the JIT transfer kernels get as per-layer pointers.
        for l in range(LAYERS):
            host.data_refs[l][slots] = _bf16(torch, e[l][:, None, :])
    elif mem_layout == "page_first_direct":
        # The L3 load path, one flat page per host page in the order set_from_flat_data_page reshapes it to,
        # (1, layer_num, page_size, 1, kv_cache_dim). (data_refs is no per-layer view here: kv_buffer[i] is page i.)
        for block in range(num_pages):
            tokens = range(block * MLA_PAGE_SIZE, min(MLA_TOKENS, (block + 1) * MLA_PAGE_SIZE))
            page = np.zeros((1, LAYERS, MLA_PAGE_SIZE, 1, KV_LORA_RANK + ROPE_DIM), dtype=np.uint16)
            page[0, :, : len(tokens), 0] = e[:, tokens.start : tokens.stop]
            host.set_from_flat_data_page(host_page_table[block] * MLA_PAGE_SIZE, _bf16(torch, page).flatten())
    else:
        raise AssertionError(mem_layout)
    harness.assert_pattern(layout, tensors, expected, cache=CACHE, params=params,
                           tables={"host_page_table": host_page_table})
    return ["geometry", "bytes"]


HANDLERS = {
    "sglang0523-mha": lambda name, sgl, mp: _device_mha(name, sgl, mp, hnd=False),
    "sglang0523-mha-hnd": lambda name, sgl, mp: _device_mha(name, sgl, mp, hnd=True),
    "sglang0523-mha-tp": _device_mha_tp,
    "sglang0523-mla": _device_mla,
    "sglang0523-host-layer-first": lambda name, sgl, mp: _host_mha(name, sgl, mp, mem_layout="layer_first"),
    "sglang0523-host-page-first": lambda name, sgl, mp: _host_mha(name, sgl, mp, mem_layout="page_first"),
    "sglang0523-host-page-first-direct": lambda name, sgl, mp: _host_mha(name, sgl, mp, mem_layout="page_first_direct"),
    "sglang0523-host-page-head": lambda name, sgl, mp: _host_mha(name, sgl, mp, mem_layout="page_head"),
    "sglang0523-host-mla-layer-first": lambda name, sgl, mp: _host_mla(name, sgl, mp, mem_layout="layer_first"),
    "sglang0523-host-mla-page-first": lambda name, sgl, mp: _host_mla(name, sgl, mp, mem_layout="page_first"),
    "sglang0523-host-mla-page-first-direct": lambda name, sgl, mp: _host_mla(name, sgl, mp, mem_layout="page_first_direct"),
}


def test_every_observed_declaration_has_a_handler():
    assert set(HANDLERS) == set(harness.observed_by(__file__))


@pytest.mark.parametrize("layout", harness.observed_by(__file__))
def test_declaration_matches_sglang(layout, sgl, monkeypatch):
    observed = harness.declaration(layout)["observed"]
    assert observed["package"] == PACKAGE
    checks = HANDLERS[layout](layout, sgl, monkeypatch)
    assert checks == observed["checks"], f"{layout}: the test ran {checks}, the declaration says it observed {observed['checks']}"


def test_commit_pinned_sglang_mha_is_not_the_release(sgl, monkeypatch):
    """sglang-mha (sglang@000ccdba: K and V two allocations per layer) does not describe 0.5.23's pool, whose
    k_buffer[l] and v_buffer[l] are the halves of one allocation: kvlayout check must refuse it."""
    pool, _ = _mha_device_pool(sgl, monkeypatch, hnd=False)
    tensors = {"k_buffer": list(pool.k_buffer), "v_buffer": list(pool.v_buffer)}
    with pytest.raises(AssertionError, match="GEOMETRY_MISMATCH"):
        harness.check_geometry("sglang-mha", tensors, cache=CACHE, params={"page_size": PAGE_SIZE})

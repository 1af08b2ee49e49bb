"""vLLM 0.33: its own KV cache planning and allocation, run on CPU, against the vllm033-* declarations.

For each KVCacheLayout the test builds the KV cache config with vLLM's planner
(vllm/v1/core/kv_cache_planning.py::get_kv_cache_config_from_groups, which fixes each KVCacheTensor's
layer and block strides), allocates it with vllm/v1/worker/utils.py::allocate_kv_cache (one int8 backing
buffer, one [B, H, N, C] view per layer) and then
  - geometry: checks that the per-layer views are the layers of one 5-D [L, B, H, N, C] view with a constant
    layer stride (what create_kv_cache_views builds internally), dumps that view and runs
    `kvlayout check LAYOUT --tensors DUMP`;
  - bytes: writes a distinct pattern per (layer, kv, token, head, dim) through the views the attention
    backends use (vllm/v1/attention/backends/flash_attn.py, FlashAttentionImpl.forward:
    key_cache, value_cache = kv_cache.transpose(1, 2).split(self.head_size, dim=-1); a token's slot is
    block_table[token // block_size] * block_size + token % block_size, as reshape_and_cache_flash stores
    it) and reads every element back through the declaration's address function.
vLLM's writer kernel (reshape_and_cache_flash) is CUDA only; the views it is handed are vLLM's own code.
"""
import types

import numpy as np
import pytest
import torch

import harness

import vllm.v1.kv_cache_layout as vllm_layout  # noqa: E402  (an engine that does not import fails the suite)
from vllm.v1.core import kv_cache_planning  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheGroupSpec, MLAAttentionSpec  # noqa: E402
from vllm.v1.worker.utils import allocate_kv_cache  # noqa: E402

KVCacheLayout = vllm_layout.KVCacheLayout

SMALL = {"num_layers": 2, "num_kv_heads": 4, "head_size": 16, "num_tokens": 67, "kv_lora_rank": 512,
         "qk_rope_head_dim": 64}
BLOCK_SIZE = 16
# MLA's 576 latents per token: 27 tokens keep every position's pattern distinct in 16 bits (harness.pattern).
MLA_TOKENS = 27
# Blocks handed to the sequence, in a non-identity order, never block 0 (BlockPool's null block).
BLOCK_TABLES = {SMALL["num_tokens"]: [3, 1, 5, 2, 4], MLA_TOKENS: [2, 1]}


def _num_blocks(tokens):
    return -(-tokens // BLOCK_SIZE) + 1  # the tokens' blocks and the null block


def _vllm_config(layout):
    # The fields get_kv_cache_config_from_groups and may_override_num_blocks read of a VllmConfig; building
    # a real one needs a model's HF config. The planning itself is vLLM's.
    cache_config = types.SimpleNamespace(
        get_resolved_kv_cache_layout=lambda: layout, num_gpu_blocks_override=None,
        prefix_cache_retention_interval=None)
    return types.SimpleNamespace(cache_config=cache_config,
                                 attention_config=types.SimpleNamespace(hisparse_config=None))


def _allocate(layout, spec, tokens):
    """vLLM's planner and allocator for SMALL's layers under `spec`: (per-layer views, the KVCacheTensor)."""
    names = [f"model.layers.{i}.self_attn.attn" for i in range(SMALL["num_layers"])]
    groups = [KVCacheGroupSpec(layer_names=names, kv_cache_spec=spec)]
    config = _vllm_config(layout)
    per_block = kv_cache_planning._get_kv_cache_bytes_per_block(groups, layout)
    kv_cache_config = kv_cache_planning.get_kv_cache_config_from_groups(config, groups, per_block * _num_blocks(tokens))
    assert kv_cache_config.num_blocks == _num_blocks(tokens)
    [tensor] = kv_cache_config.kv_cache_tensors
    views = allocate_kv_cache(kv_cache_config, torch.device("cpu"), layout)
    return [views[n] for n in names], tensor


def _as_5d(views, tensor):
    """The per-layer views as the one 5-D view create_kv_cache_views cut them from; asserts they are exactly
    its layers (same storage, a constant layer stride, same shape and strides)."""
    first = views[0]
    element = first.element_size()
    assert tensor.layer_stride % element == 0
    layer_stride = tensor.layer_stride // element
    view = torch.as_strided(first, size=(len(views), *first.shape), stride=(layer_stride, *first.stride()),
                            storage_offset=first.storage_offset())
    for i, v in enumerate(views):
        assert v.untyped_storage().data_ptr() == first.untyped_storage().data_ptr(), "one backing allocation"
        assert v.data_ptr() == view[i].data_ptr(), f"layer {i} starts {tensor.layer_stride} bytes after layer {i - 1}"
        assert tuple(v.shape) == tuple(view[i].shape) and tuple(v.stride()) == tuple(view[i].stride())
    return view


def _slots(tokens):
    table = BLOCK_TABLES[tokens]
    assert sorted(table) == list(range(1, _num_blocks(tokens)))
    t = np.arange(tokens)
    return torch.tensor([table[i // BLOCK_SIZE] for i in t]), torch.tensor(t % BLOCK_SIZE)


def _bf16(bits):
    return torch.from_numpy(bits.astype(np.int16)).view(torch.bfloat16)


def _check_heads(name, layout, params=None, padded_bytes=None):
    L, H, D, T = SMALL["num_layers"], SMALL["num_kv_heads"], SMALL["head_size"], SMALL["num_tokens"]
    spec = FullAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=H, head_size=D, dtype=torch.bfloat16,
                             page_size_padded=padded_bytes)
    views, tensor = _allocate(layout, spec, T)
    harness.check_geometry(name, {"kv_cache": _as_5d(views, tensor)}, params=params)

    expected = harness.pattern(L * 2 * T * H * D)
    grid = expected.reshape(L, 2, T, H, D)
    blocks, offsets = _slots(T)
    for layer, kv_cache in enumerate(views):
        key_cache, value_cache = kv_cache.transpose(1, 2).split(D, dim=-1)  # flash_attn.py, FlashAttentionImpl.forward
        key_cache[blocks, offsets] = _bf16(grid[layer, 0])
        value_cache[blocks, offsets] = _bf16(grid[layer, 1])
    compared = harness.assert_pattern(name, {"kv_cache": [views[0]]}, expected, params=params,
                                      tables={"block_table": BLOCK_TABLES[T]})
    assert compared == expected.size


def _check_mla(name, layout):
    L, T = SMALL["num_layers"], MLA_TOKENS
    latent = SMALL["kv_lora_rank"] + SMALL["qk_rope_head_dim"]
    spec = MLAAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=1, head_size=latent, dtype=torch.bfloat16)
    views, tensor = _allocate(layout, spec, T)
    params = {"num_tokens": T}
    harness.check_geometry(name, {"kv_cache": _as_5d(views, tensor)}, params=params)

    expected = harness.pattern(L * T * latent)
    grid = expected.reshape(L, T, latent)
    blocks, offsets = _slots(T)
    for layer, kv_cache in enumerate(views):
        # [B, 1, N, C]: the MLA backends squeeze the one head slot (concat_and_cache_mla's kv_cache[b, slot, :]).
        kv_cache[:, 0][blocks, offsets] = _bf16(grid[layer])
    compared = harness.assert_pattern(name, {"kv_cache": [views[0]]}, expected, params=params,
                                      tables={"block_table": BLOCK_TABLES[T]})
    assert compared == expected.size


def _unpadded_page_bytes():
    return SMALL["num_kv_heads"] * BLOCK_SIZE * 2 * SMALL["head_size"] * 2


HANDLERS = {
    f"vllm033-{layout.name.lower()}": (lambda name, layout=layout: _check_heads(name, layout)) for layout in KVCacheLayout
}
HANDLERS["vllm033-mla-lbnhc"] = lambda name: _check_mla(name, KVCacheLayout.LBNHC)
HANDLERS["vllm033-mla-blnhc"] = lambda name: _check_mla(name, KVCacheLayout.BLNHC)


def test_every_observed_declaration_has_a_handler():
    assert set(HANDLERS) == set(harness.observed_by(__file__))


@pytest.mark.parametrize("name", harness.observed_by(__file__))
def test_engine_agrees(name):
    HANDLERS[name](name)


# Page padding (AttentionSpec.page_size_padded) where vLLM allows it: the layouts whose page grid is L and B.
PADDED = [KVCacheLayout.LBHNC, KVCacheLayout.LBNHC, KVCacheLayout.BLHNC, KVCacheLayout.BLNHC]


@pytest.mark.parametrize("layout", PADDED, ids=lambda l: l.name)
def test_padded_pages_agree(layout):
    padded = _unpadded_page_bytes() + 256
    _check_heads(f"vllm033-{layout.name.lower()}", layout, params={"page_size_padded": padded}, padded_bytes=padded)


def test_a_wrong_declaration_is_caught():
    """Control: LBNHC's cache read through the LBHNC declaration (heads and tokens swapped in the page) fails
    the geometry check, and its bytes disagree."""
    H, D = SMALL["num_kv_heads"], SMALL["head_size"]
    spec = FullAttentionSpec(block_size=BLOCK_SIZE, num_kv_heads=H, head_size=D, dtype=torch.bfloat16)
    views, tensor = _allocate(KVCacheLayout.LBNHC, spec, SMALL["num_tokens"])
    with pytest.raises(AssertionError, match="GEOMETRY_MISMATCH|stride"):
        harness.check_geometry("vllm033-lbhnc", {"kv_cache": _as_5d(views, tensor)})

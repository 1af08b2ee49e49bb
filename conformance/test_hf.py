"""Hugging Face transformers 5.20: DynamicCache as the library builds it, against hf520-dynamic.

  - geometry: a randomly initialised tiny Llama (no weights are downloaded) runs a forward with
    use_cache=True over the first tokens and a second forward over the rest; the DynamicCache it returns is
    dumped and `kvlayout check hf520-dynamic --tensors DUMP` must say OK;
  - bytes: a distinct pattern per (layer, kv, token, head, dim) goes through DynamicCache.update (the write
    path every attention layer calls, in two chunks so that DynamicLayer's torch.cat growth is exercised) and
    every element is read back through the declaration's address function.
"""
import numpy as np
import pytest
import torch

import harness

import transformers  # noqa: E402  (an engine that does not import fails the suite)
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM  # noqa: E402

SMALL = {"num_layers": 2, "num_kv_heads": 4, "head_size": 16, "num_tokens": 67}
FIRST_CHUNK = 40


def _tensors(cache):
    return {"keys": [layer.keys for layer in cache.layers], "values": [layer.values for layer in cache.layers]}


def _forward_cache():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=128, intermediate_size=256, num_hidden_layers=SMALL["num_layers"],
                         num_attention_heads=8, num_key_value_heads=SMALL["num_kv_heads"], head_dim=SMALL["head_size"],
                         max_position_embeddings=256)
    model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (1, SMALL["num_tokens"]))
    with torch.no_grad():
        out = model(ids[:, :FIRST_CHUNK], use_cache=True)
        out = model(ids[:, FIRST_CHUNK:], past_key_values=out.past_key_values, use_cache=True)
    cache = out.past_key_values
    assert isinstance(cache, DynamicCache)
    assert cache.get_seq_length() == SMALL["num_tokens"]
    return cache


def _check_dynamic(name):
    harness.check_geometry(name, _tensors(_forward_cache()))

    L, H, T, D = SMALL["num_layers"], SMALL["num_kv_heads"], SMALL["num_tokens"], SMALL["head_size"]
    expected = harness.pattern(L * 2 * T * H * D)
    grid = torch.from_numpy(expected.astype(np.int16).reshape(L, 2, T, H, D)).view(torch.bfloat16)
    cache = DynamicCache()
    for lo, hi in ((0, FIRST_CHUNK), (FIRST_CHUNK, T)):
        for layer in range(L):
            # update takes [batch, heads, new tokens, head_dim]
            k = grid[layer, 0, lo:hi].permute(1, 0, 2).unsqueeze(0).contiguous()
            v = grid[layer, 1, lo:hi].permute(1, 0, 2).unsqueeze(0).contiguous()
            cache.update(k, v, layer)
    harness.check_geometry(name, _tensors(cache))
    assert harness.assert_pattern(name, _tensors(cache), expected) == expected.size


HANDLERS = {"hf520-dynamic": _check_dynamic}


def test_every_observed_declaration_has_a_handler():
    assert set(HANDLERS) == set(harness.observed_by(__file__))


@pytest.mark.parametrize("name", harness.observed_by(__file__))
def test_engine_agrees(name):
    HANDLERS[name](name)


def test_installed_release_is_the_pinned_one():
    assert transformers.__version__ == harness.declaration("hf520-dynamic")["observed"]["package"].split("==")[1]


def test_a_wrong_declaration_is_caught():
    """Control: the 4.x declaration names its tensors key_cache / value_cache, which 5.x no longer has."""
    cache = _forward_cache()
    with pytest.raises(AssertionError):
        harness.check_geometry("hf-dynamic", _tensors(cache))

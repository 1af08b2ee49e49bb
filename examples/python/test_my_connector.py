"""What a connector author copies into their own test suite: declare the layout their connector writes,
prove that moving vLLM's cache into it is exact, check that the tensors they allocate really have the
declared geometry, and run the verified relayout, checking it against kvlayout's address function.

Run it with `python -m pytest examples/python` (ctest runs it against the build tree's package; after
`pip install .` it runs as is).
"""
import numpy as np
import pytest

import kvlayout

# The connector's host staging buffer, declared inline in kvlayout's layout language (specs/README.md):
# one allocation for the whole request, [layer][K|V][token][head][dim], bf16. A made-up layout for this
# example, hence "control": a real engine's declaration cites its source instead.
MY_LAYOUT = {
    "name": "my-connector-staging",
    "engine": "my connector's host staging buffer",
    "control": True,
    "description": "One buffer per request: [num_layers, 2, num_tokens, num_kv_heads, head_size], token-major.",
    "content": "kv-heads",
    "dtype": "bf16",
    "tensors": [{
        "name": "staging",
        "shape": ["num_layers", 2, "num_tokens", "num_kv_heads", "head_size"],
        "index": ["layer", "kv", "token", "head", "dim"],
    }],
}

# The model's cache shape, small enough for a unit test (a real test would use its model's numbers).
MY_MODEL = {"name": "my-model-tiny", "synthetic": True, "params": {"num_layers": 3, "num_kv_heads": 2, "head_size": 64, "num_tokens": 40}}


def test_moving_vllms_cache_into_my_layout_is_exact():
    proof = kvlayout.prove("vllm-flash-nhd", MY_LAYOUT, MY_MODEL)
    # EXACT_TOKEN: every position arrives; vLLM's last block has padding slots nobody needs.
    assert proof.exact, (proof.grade, proof.reason, proof.counterexample)


def test_my_tensors_have_the_declared_geometry():
    staging = np.empty((3, 2, 40, 2, 64), dtype=np.uint16)  # numpy has no bf16: its raw bits
    assert kvlayout.check(MY_LAYOUT, cache=MY_MODEL, tensors={"staging": staging}).ok
    # The bug this catches: a buffer allocated head-major while the connector writes it token-major.
    wrong = np.empty((3, 2, 2, 40, 64), dtype=np.uint16).transpose(0, 1, 3, 2, 4)
    result = kvlayout.check(MY_LAYOUT, cache=MY_MODEL, tensors={"staging": wrong})
    assert result.verdict == "GEOMETRY_MISMATCH", result


def test_the_relayout_puts_every_sampled_position_where_both_declarations_say():
    move = kvlayout.Relayout("vllm-flash-nhd", MY_LAYOUT, MY_MODEL)
    rng = np.random.default_rng(0)
    src = [rng.integers(1, 2**16, size=b["elements"], dtype=np.uint16) for b in move.abi["source"]["buffers"]]
    block_table = rng.permutation(3).astype(np.int32)  # ceil(40 / 16) = 3 blocks, in any order
    staging = np.zeros((3, 2, 40, 2, 64), dtype=np.uint16)
    move(src, [staging], [block_table], [], num_tokens=40, threads=2)
    for _ in range(20):
        coord = dict(layer=int(rng.integers(3)), kv=int(rng.integers(2)), token=int(rng.integers(40)),
                     head=int(rng.integers(2)), dim=int(rng.integers(64)))
        there = kvlayout.address("vllm-flash-nhd", MY_MODEL, tables={"block_table": block_table.tolist()}, **coord)
        here = kvlayout.address(MY_LAYOUT, MY_MODEL, **coord)
        assert staging.reshape(-1)[here.offset] == src[there.instance][there.offset], coord


def test_a_move_that_loses_data_is_refused():
    # The same connector written for an MLA model cannot take per-head K/V: refused, with the reason.
    with pytest.raises(kvlayout.Refused) as e:
        kvlayout.Relayout("vllm-flash-nhd", "vllm-mla", MY_MODEL | {"params": {**MY_MODEL["params"], "kv_lora_rank": 512,
                                                                               "qk_rope_head_dim": 64}})
    assert e.value.grade == "REFUSED"

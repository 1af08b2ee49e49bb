"""check (refinement, offset formula, tensor geometry), plan_emit and plan_check: each with a case that
must fail."""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kvlayout
from conftest import strip_timings

SPECS = Path(kvlayout._inputs.specs_dir())

# vLLM NHD on `small`: per layer one allocation (2, num_blocks=5, block_size=16, heads=4, head_size=16).
NHD_OFFSET = ("kv * 5 * 16 * 4 * 16 + block_table[token / 16] * 16 * 4 * 16 + token % 16 * 4 * 16 + head * 16 + dim")
HND_OFFSET = ("kv * 5 * 16 * 4 * 16 + block_table[token / 16] * 16 * 4 * 16 + head * 16 * 16 + token % 16 * 16 + dim")


def test_an_assumption_that_matches_is_ok_and_one_that_does_not_has_a_counterexample():
    assert kvlayout.check("vllm-flash-nhd", "vllm-flash-nhd", cache="small").ok
    wrong = kvlayout.check("vllm-flash-nhd", "vllm-flash-hnd", cache="small")
    assert not wrong.ok and wrong.verdict == "WRONG_MAPPING" and wrong.counterexample is not None
    assert wrong.counterexample["real"]["tensor"] == "kv_cache"


def test_an_offset_formula_is_checked_like_a_declaration():
    assert kvlayout.check("vllm-flash-nhd", cache="small", assumed_offset=NHD_OFFSET).ok
    wrong = kvlayout.check("vllm-flash-nhd", cache="small", assumed_offset=HND_OFFSET)
    assert wrong.verdict == "WRONG_MAPPING"
    with pytest.raises(kvlayout.SpecError):
        kvlayout.check("vllm-flash-nhd", cache="small", assumed_offset="token / (head - head)")


def test_check_to_json_equals_the_cli(cli):
    out = subprocess.run([cli, "check", "vllm-flash-nhd", "vllm-flash-hnd", "--cache", "small", "--json", "--specs", str(SPECS)],
                         capture_output=True, text=True).stdout
    assert strip_timings(kvlayout.check("vllm-flash-nhd", "vllm-flash-hnd", cache="small").to_json()) == \
        strip_timings(json.loads(out))


def vllm_caches(shape=(2, 5, 16, 4, 16), layers=2):
    # As vLLM allocates them: a raw byte buffer per layer, viewed as the element type, then shaped.
    return [np.zeros(int(np.prod(shape)) * 2, dtype=np.uint8).view(np.uint16).reshape(shape) for _ in range(layers)]


def test_tensor_geometry_from_numpy_arrays_is_checked_against_the_declaration():
    caches = vllm_caches()
    dump = kvlayout.tensor_geometry({"kv_cache": caches})
    assert [r["shape"] for r in dump["tensors"]] == [[2, 5, 16, 4, 16]] * 2
    assert dump["tensors"][0]["stride"] == [5120, 1024, 64, 16, 1] and dump["tensors"][0]["dtype"] == "uint16"
    assert kvlayout.check("vllm-flash-nhd", cache="small", tensors=dump).ok
    assert kvlayout.check("vllm-flash-nhd", cache="small", tensors={"kv_cache": caches}).ok  # the tensors themselves
    # The HND cache has heads before tokens: the same arrays do not match it (control).
    hnd = kvlayout.check("vllm-flash-hnd", cache="small", tensors={"kv_cache": caches})
    assert hnd.verdict == "GEOMETRY_MISMATCH" and "stride" in hnd.message
    # One layer missing.
    assert kvlayout.check("vllm-flash-nhd", cache="small", tensors={"kv_cache": caches[:1]}).verdict == "GEOMETRY_MISMATCH"


def test_an_emitted_plan_checks_ok_and_a_corrupted_one_does_not():
    plan = kvlayout.plan_emit("vllm-flash-nhd", "sglang-mha", "small", format="runs")
    assert plan["form"] == "descriptors" and plan["source_runs"]
    assert kvlayout.plan_check("vllm-flash-nhd", "sglang-mha", "small", plan).ok
    families = kvlayout.plan_emit("vllm-flash-nhd", "sglang-mha", "small")
    assert kvlayout.plan_check("vllm-flash-nhd", "sglang-mha", "small", families).ok
    # Swap the targets of the first two runs: every byte still arrives once, at the wrong place.
    corrupted = json.loads(json.dumps(plan))
    runs = corrupted["target_runs"]
    runs[0]["addr"], runs[1]["addr"] = runs[1]["addr"], runs[0]["addr"]
    result = kvlayout.plan_check("vllm-flash-nhd", "sglang-mha", "small", corrupted)
    assert result.verdict == "WRONG_MAPPING" and result.counterexample is not None


def test_plan_emit_refuses_a_pair_that_is_not_exact():
    with pytest.raises(kvlayout.Refused) as e:
        kvlayout.plan_emit("vllm-flash-nhd", "vllm-mla", "small")
    assert e.value.grade == "REFUSED" and e.value.reason["code"] == "content-mismatch"

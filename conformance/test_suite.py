"""The suite's own checks (no engine package needed): every observation is held to account by a test that
installs exactly the release it names, and the harness catches a declaration that disagrees with the
tensors it is given (its control)."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import harness

CONFORMANCE = harness.REPO / "conformance"
ENGINES = sorted(p.stem for p in (CONFORMANCE / "requirements").glob("*.txt") if p.stem != "base")


def _observed():
    for path in sorted((harness.SPECS / "engines").glob("*.json")):
        doc = json.loads(path.read_text())
        if "observed" in doc:
            yield doc


def _pins(engine):
    pins = {}
    for line in (CONFORMANCE / "requirements" / f"{engine}.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements/{engine}.txt: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_every_engine_has_its_requirements_and_its_test():
    tests = sorted(p.stem[len("test_"):] for p in CONFORMANCE.glob("test_*.py") if p.stem != "test_suite")
    assert tests == ENGINES


@pytest.mark.parametrize("engine", ENGINES)
def test_every_requirement_is_pinned(engine):
    assert _pins(engine)


def test_every_observation_names_a_test_that_installs_that_release():
    seen = 0
    for doc in _observed():
        obs = doc["observed"]
        m = re.fullmatch(r"conformance/test_(\w+)\.py", obs["test"])
        assert m, f"{doc['name']}: observed.test {obs['test']!r} is not conformance/test_ENGINE.py"
        engine = m.group(1)
        assert engine in ENGINES, f"{doc['name']}: no conformance/requirements/{engine}.txt"
        name, version = obs["package"].split("==")
        pinned = _pins(engine).get(re.sub(r"[-_.]+", "-", name).lower())
        assert pinned == version, f"{doc['name']}: observed {obs['package']}, but requirements/{engine}.txt pins {name}=={pinned}"
        assert doc["cite"]["version"] == obs["package"]
        seen += 1
    assert seen > 0


def _flash_nhd_tensors(values):
    """vllm-flash-nhd on `small`: per layer (2, num_blocks, block_size, num_kv_heads, head_size), identity block
    table, each position holding values[position]."""
    L, T, H, D, B = 2, 67, 4, 16, 16
    blocks = -(-T // B)
    grid = values.reshape(L, 2, T, H, D)
    layers = []
    for layer in range(L):
        t = torch.zeros((2, blocks * B, H, D), dtype=torch.int16)
        t[:, :T] = torch.from_numpy(grid[layer].astype(np.int16))
        layers.append(t.view(2, blocks, B, H, D).view(torch.bfloat16))
    return {"kv_cache": layers}


def test_the_harness_reads_a_right_declaration_back():
    expected = harness.pattern(2 * 2 * 67 * 4 * 16)
    tensors = _flash_nhd_tensors(expected)
    harness.check_geometry("vllm-flash-nhd", tensors)
    assert harness.assert_pattern("vllm-flash-nhd", tensors, expected) == expected.size


def test_control_the_harness_catches_a_wrong_declaration():
    """The same bytes read through vllm-flash-hnd (heads before tokens in a block): the geometry check and the
    read-back must both fail, the latter naming a position and the position whose pattern it found."""
    expected = harness.pattern(2 * 2 * 67 * 4 * 16)
    tensors = _flash_nhd_tensors(expected)
    with pytest.raises(AssertionError, match="GEOMETRY_MISMATCH|stride"):
        harness.check_geometry("vllm-flash-hnd", tensors)
    with pytest.raises(AssertionError, match=r"positions disagree; first \(layer=0, kv=0, token=\d+, head=\d+, dim=\d+\).*the pattern of"):
        harness.assert_pattern("vllm-flash-hnd", tensors, expected)


def test_control_a_pattern_the_engine_did_not_write_is_caught():
    expected = harness.pattern(2 * 2 * 67 * 4 * 16)
    tensors = _flash_nhd_tensors(expected)
    wrong = expected.copy()
    wrong[12345] ^= 1
    with pytest.raises(AssertionError, match="1 positions disagree"):
        harness.assert_pattern("vllm-flash-nhd", tensors, wrong)

"""layouts, address, prove: answers equal to the CLI's, inline declarations, and bad input."""
import json
import subprocess
from pathlib import Path

import pytest

import kvlayout
from conftest import strip_timings

SPECS = Path(kvlayout._inputs.specs_dir())


def test_layouts_lists_every_declaration_with_its_citation():
    listed = {l.name: l for l in kvlayout.layouts()}
    assert {"vllm-flash-nhd", "sglang-mha", "lmcache-2ltd", "trtllm-pool", "hf-dynamic"} <= set(listed)
    for layout in listed.values():
        assert layout.control or layout.cite is not None, layout.name  # every engine layout cites its source
    assert listed["broken-collide"].control
    assert listed["vllm-flash-nhd"].dtype == "bf16" and listed["vllm-flash-nhd"].content == "kv-heads"


def test_layouts_equal_the_cli(cli):
    out = subprocess.run([cli, "list", "--json", "--specs", str(SPECS)], capture_output=True, text=True, check=True).stdout
    assert [l.name for l in kvlayout.layouts()] == [d["name"] for d in json.loads(out)]


def vllm_nhd_offset(layer, kv, token, head, dim, block_table, heads=4, head_size=16, blocks=5, block_size=16):
    """vLLM FlashAttention NHD, written out independently: per layer [2, blocks, block_size, heads, head_size]."""
    block = block_table[token // block_size]
    return (((kv * blocks + block) * block_size + token % block_size) * heads + head) * head_size + dim


@pytest.mark.parametrize("coord", [dict(layer=0, kv=0, token=0, head=0, dim=0), dict(layer=1, kv=1, token=66, head=3, dim=15),
                                   dict(layer=1, kv=0, token=17, head=2, dim=5)])
def test_address_matches_the_engine_formula(coord):
    table = [3, 0, 4, 1, 2]
    a = kvlayout.address("vllm-flash-nhd", "small", tables={"block_table": table}, **coord)
    assert a.held and a.in_bounds and a.tensor == "kv_cache" and a.instance == coord["layer"]
    assert a.offset == vllm_nhd_offset(**coord, block_table=table)
    assert a.byte_offset == 2 * a.offset


def test_address_takes_k_and_v_by_name_and_reports_a_position_not_held():
    assert kvlayout.address("vllm-flash-nhd", "small", layer=0, kv="V", token=1, head=0, dim=0).offset == \
        vllm_nhd_offset(0, 1, 1, 0, 0, [0, 1, 2, 3, 4])
    # sglang-mha's k_buffer holds kv == 0 only, v_buffer kv == 1: every position is held by one of them.
    assert kvlayout.address("sglang-mha", "small", layer=0, kv=1, token=0, head=0, dim=0).tensor == "v_buffer"


def test_prove_grades_and_explains():
    proof = kvlayout.prove("vllm-flash-nhd", "sglang-mha", "small")
    assert proof.grade == "EXACT_TOKEN" and proof.exact and proof.reason["code"] == "padding"
    assert {o.name for o in proof.obligations} >= {"fits", "in-bounds", "injective", "covers", "carries", "values"}
    assert proof.counterexample is not None  # the padding witness: an element no position reaches
    # 64 tokens fill the 16-token blocks: no padding, every byte returns.
    exact = kvlayout.prove("vllm-flash-nhd", "vllm-flash-hnd", "small", params={"num_tokens": 64})
    assert exact.grade == "EXACT_BYTE" and exact.counterexample is None


def test_prove_to_json_equals_the_cli(cli):
    for pair in (("vllm-flash-nhd", "sglang-mha"), ("vllm-flash-nhd", "broken-collide")):
        out = subprocess.run([cli, "prove", *pair, "--cache", "small", "--json", "--specs", str(SPECS)],
                             capture_output=True, text=True).stdout
        assert strip_timings(kvlayout.prove(*pair, "small").to_json()) == strip_timings(json.loads(out))


def test_a_refused_pair_carries_its_counterexample_and_what_would_unblock_it():
    proof = kvlayout.prove("vllm-flash-nhd", "broken-collide", "small")
    assert proof.grade == "REFUSED" and proof.reason["code"] == "collision" and not proof.exact
    positions = proof.counterexample["positions"]
    assert len(positions) == 2 and positions[0]["coord"] != positions[1]["coord"]
    mla = kvlayout.prove("vllm-flash-nhd", "vllm-mla", "small")
    assert mla.grade == "REFUSED" and "MLA" in mla.unblocked_by


def test_an_inline_declaration_proves_like_its_file():
    declaration = json.loads((SPECS / "engines" / "vllm-flash-nhd.json").read_text())
    declaration["name"] = "my-connector-layout"
    declaration.pop("cite", None)
    declaration["control"] = True
    proof = kvlayout.prove(declaration, "vllm-flash-nhd", "small", params={"num_tokens": 64})
    assert proof.source == "my-connector-layout" and proof.grade == "EXACT_BYTE"
    # A cache shape inline too, with a parameter override on top.
    cache = json.loads((SPECS / "caches" / "small.json").read_text())
    cache["name"] = "tiny"
    assert kvlayout.prove(declaration, "sglang-mha", cache, params={"num_tokens": 40}).grade == "EXACT_TOKEN"


def test_bad_input_is_a_spec_error_naming_what_and_where():
    with pytest.raises(kvlayout.SpecError) as e:
        kvlayout.prove("vllm-flash-nhd", "no-such-layout", "small")
    assert "no-such-layout" in e.value.found and "vllm-flash-nhd" in e.value.expected
    broken = json.loads((SPECS / "engines" / "vllm-flash-nhd.json").read_text())
    broken["tensors"][0]["index"][1] = "block_table[token / blok_size]"
    with pytest.raises(kvlayout.SpecError) as e:
        kvlayout.prove(broken, "vllm-flash-nhd", "small")
    assert e.value.path.startswith("/tensors/0/index/1") and "blok_size" in str(e.value)
    with pytest.raises(kvlayout.SpecError) as e:
        kvlayout.prove("vllm-flash-nhd", "sglang-mha", "small", params={"num_tokens": "many"})
    assert e.value.path == "--param"
    with pytest.raises(kvlayout.SpecError):
        kvlayout.address("vllm-flash-nhd", "small", layer=0, kv=0, token=999, head=0, dim=0)
    with pytest.raises(kvlayout.SpecError):
        kvlayout.prove("vllm-flash-nhd", "sglang-mha", "small", limit_ms=0)


def test_version_and_module_entry_point():
    assert kvlayout.__version__
    import sys
    done = subprocess.run([sys.executable, "-m", "kvlayout", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and kvlayout.__version__ in done.stdout
    bad = subprocess.run([sys.executable, "-m", "kvlayout", "prove", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "error" in bad.stderr

"""Writes the seed corpus of check_input_fuzz into OUT_DIR: each seed is its dispatch byte ('0' tensor dump,
'1' plan JSON, '2' --assumed-offset lines) followed by the input proper (see check_input_fuzz.cpp).

    python3 fuzz/check_seeds.py ROOT OUT_DIR

ROOT is the source tree: the tensor dumps, plans and family plans of tests/data/check/ are copied (compact
JSON, so the fuzzer's mutations stay small); a few plans in the forms the test data lacks (runs, transfers,
token slots, families between the harness's own pair) and offset formulas for flashinfer-nhd on `small`
are written here."""
import json
import pathlib
import sys

# The harness's plan pair on `small`: vllm-flash-nhd [2, 5, 16, 4, 16] per layer (K/V-first) to
# vllm-flashinfer-nhd [5, 2, 16, 4, 16] (blocks-first); one K or V block is 16 * 4 * 16 * 2 = 2048 bytes.
SB, TB, NB, BB = 0x7F0000000000, 0x7E0000000000, 5, 2048
REGIONS = {"source_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(SB + l * 0x100000)} for l in range(2)],
           "target_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(TB + l * 0x100000)} for l in range(2)]}


def runs_plan():
    # Identity tables: per layer, K of all blocks is one source run; the target strides over K/V pairs.
    p = {"form": "descriptors", **REGIONS, "source_runs": [], "target_runs": []}
    for l in range(2):
        for kv in range(2):
            p["source_runs"].append({"addr": hex(SB + l * 0x100000 + kv * NB * BB), "len": BB, "stride": BB, "count": NB})
            p["target_runs"].append({"addr": hex(TB + l * 0x100000 + kv * BB), "len": BB, "stride": 2 * BB, "count": NB})
    return p


def transfers_plan():
    p = {"form": "descriptors", **REGIONS, "transfers": [], "scope": "token < 32"}
    for l in range(2):
        for kv in range(2):
            for b in range(2):
                p["transfers"].append([SB + l * 0x100000 + kv * NB * BB + b * BB,
                                       TB + l * 0x100000 + b * 2 * BB + kv * BB, BB])
    return p


def families_plan():
    one = "block_size * num_kv_heads * head_size * 2"
    fam = []
    for kv, name in ((0, "K"), (1, "V")):
        fam.append({"id": name, "over": {"layer": "num_layers", "b": "num_blocks"},
                    "source": {"tensor": "kv_cache", "instance": "layer",
                               "offset": f"({kv} * num_blocks + source.block_table[b]) * ({one})"},
                    "target": {"tensor": "kv_cache", "instance": "layer",
                               "offset": f"(2 * target.block_table[b] + {kv}) * ({one})"},
                    "bytes": one})
    return {"form": "families", "families": fam}


GENERATED_PLANS = {
    "runs": runs_plan(),
    "transfers": transfers_plan(),
    "families_flash_to_flashinfer": families_plan(),
    "families_scoped": {**families_plan(), "scope": "token < 40"},
    "slots_token": {"form": "slots", "granularity": "token", "block_size": 16, "tokens": [0, 3],
                    "source_slots": [32, 33, 34], "target_slots": [16, 17, 18]},
}

# flashinfer-nhd on small: page p holds K then V of 16 tokens x 4 heads x 16 dims (2 * 1024 elements).
# Lines: offset, --assumed-holds, --scope, --assumed-instance, --assumed-tensor (empty: left out).
OFFSETS = {
    "page_first": ["kv_indices[token / 16] * 2 * 16 * 64 + kv * 16 * 64 + token % 16 * 64 + head * 16 + dim"],
    "kv_first": ["kv * num_pages * 16 * 64 + kv_indices[token / 16] * 16 * 64 + token % 16 * 64 + head * 16 + dim"],
    "head_slice": ["kv_indices[token / page_size] * 2 * page_size * 64 + kv * page_size * 64 + token % page_size * 64 "
                   "+ head * head_size + dim", "head < 2", "head < 2", "layer", "paged_kv_cache"],
    "past_end": ["kv_indices[token / 16] * 2 * 16 * 64 + kv * 16 * 64 + token % 16 * 64 + head * 16 + dim + 1"],
    "nonlinear": ["kv_indices[token / 16] * 2048 + kv * 1024 + token % 16 * 64 + head * 16 + dim "
                  "+ max(0, 1 - (token * token + 5) % 7)", "", "token >= 0"],
    "one_instance": ["layer * 10240 + kv_indices[token / 16] * 2048 + kv * 1024 + token % 16 * 64 + head * 16 + dim",
                     "dim % 2 == 0", "", "0"],
}


def compact(path):
    return json.dumps(json.loads(pathlib.Path(path).read_text()), separators=(",", ":"))


def main(root, out):
    root, out = pathlib.Path(root), pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for f in sorted((root / "tests/data/check/geometry").glob("*.json")):
        seeds["geometry_" + f.stem] = "0" + compact(f)
    for folder in ("plans", "families"):
        for f in sorted((root / "tests/data/check" / folder).glob("*.json")):
            seeds[folder + "_" + f.stem] = "1" + compact(f)
    for name, p in GENERATED_PLANS.items():
        seeds["plan_" + name] = "1" + json.dumps(p, separators=(",", ":"))
    for name, lines in OFFSETS.items():
        seeds["offset_" + name] = "2" + "\n".join(lines)
    for name, text in seeds.items():
        (out / name).write_text(text)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_seeds.py ROOT OUT_DIR")
    main(sys.argv[1], sys.argv[2])

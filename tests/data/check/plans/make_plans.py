"""Writes the plan check CLI test's plans (see README.md). Addresses follow the two declarations:
vllm-flash-nhd   block b of K/V half kv in layer l: base_l + kv * 5 * 2048 + table[b] * 2048
vllm-flashinfer-nhd                                  base_l + table[b] * 4096 + kv * 2048"""
import json

SB, TB, NB, BB = 0x7F0000000000, 0x7E0000000000, 5, 2048
SRC_TABLE, DST_TABLE = [3, 0, 4, 1, 2], [1, 2, 0, 4, 3]


def plan():
    p = {"form": "descriptors",
         "source_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(SB + l * 0x100000)} for l in range(2)],
         "target_regions": [{"tensor": "kv_cache", "instance": l, "base": hex(TB + l * 0x100000)} for l in range(2)],
         "source_descriptors": [], "target_descriptors": [],
         "tables": {"source.block_table": SRC_TABLE, "target.block_table": DST_TABLE}}
    for l in range(2):
        for kv in range(2):
            for b in range(NB):
                p["source_descriptors"].append([hex(SB + l * 0x100000 + kv * NB * BB + SRC_TABLE[b] * BB), BB, 0])
                p["target_descriptors"].append([hex(TB + l * 0x100000 + DST_TABLE[b] * 2 * BB + kv * BB), BB, 0])
    return p


def write(name, p):
    with open(name, "w") as f:
        json.dump(p, f, indent=1)
        f.write("\n")


write("per_block_ok.json", plan())
p = plan()  # block i's bytes sent to block i + 1's descriptor
p["pairs"] = [[i, i + 1 if i % NB != NB - 1 else i - NB + 1] for i in range(4 * NB)]
write("per_block_off_by_one.json", p)
p = plan()
p["scope"] = "token < 32"
write("per_block_neighbour.json", p)
p = plan()
for side in ("source_descriptors", "target_descriptors"):
    p[side] = [d for i, d in enumerate(p[side]) if i % NB != NB - 1]
write("per_block_no_last_block.json", p)
p = plan()
p["target_descriptors"][2][1] = 1024
write("per_block_bad_length.json", p)
write("slots_block_ok.json", {"form": "slots", "granularity": "block", "block_size": 16, "tokens": [0, 40],
                              "source_blocks": [4, 0, 2], "target_blocks": [1, 3, 0]})
write("slots_block_reused.json", {"form": "slots", "granularity": "block", "block_size": 16, "tokens": [0, 40],
                                  "source_blocks": [4, 0, 2], "target_blocks": [1, 3, 1]})

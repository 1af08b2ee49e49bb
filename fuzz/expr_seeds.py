#!/usr/bin/env python3
"""Seed corpus for expr_parse_fuzz: every expression written in the layout specs, one file each.

usage: expr_seeds.py SPECS_DIR OUT_DIR

The fields in the expression language (specs/README.md) are the values under params, requires, tables,
holds, coords, offset, size, shape, index and strides; their strings (and integer literals) are taken
as written, deduplicated.
"""
import hashlib
import json
import pathlib
import sys

EXPRESSION_KEYS = {"params", "requires", "tables", "holds", "coords", "offset", "size", "shape", "index",
                   "strides", "length", "range"}


def expressions(value, inside=False):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from expressions(item, inside or key in EXPRESSION_KEYS)
    elif isinstance(value, list):
        for item in value:
            yield from expressions(item, inside)
    elif inside and isinstance(value, (str, int)) and not isinstance(value, bool):
        yield str(value)


def main():
    specs, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    seen = set()
    for path in sorted(specs.glob("**/*.json")):
        for text in expressions(json.loads(path.read_text())):
            if text not in seen:
                seen.add(text)
                (out / hashlib.sha1(text.encode()).hexdigest()).write_text(text)
    print(f"expr_seeds: {len(seen)} expressions from {specs}")


if __name__ == "__main__":
    main()

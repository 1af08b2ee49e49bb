#!/usr/bin/env python3
"""Rewrites spec JSON files in one style: 2-space indent, arrays of scalars on one line.

usage: scripts/format_specs.py [FILE...]   (default: every specs/**/*.json)
"""
import collections
import glob
import json
import sys


def render(value, indent=0):
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {render(v, indent + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(json.dumps(v) for v in value) + "]"
        items = [pad + "  " + render(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)


def main(paths):
    for path in paths or sorted(glob.glob("specs/**/*.json", recursive=True)):
        with open(path) as f:
            data = json.load(f, object_pairs_hook=collections.OrderedDict)
        with open(path, "w") as f:
            f.write(render(data) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])

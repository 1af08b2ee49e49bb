"""What every conformance test does with an engine's own tensors: dump their geometry and run
`kvlayout check LAYOUT --tensors DUMP`, and read every element back through the declaration's address
function (`kvlayout addr LAYOUT --all --json`) to compare it with the pattern the engine's own write path
stored there.

Standard library plus numpy; torch tensors are read through what every torch tensor has (data_ptr,
untyped_storage). The kvlayout command is $KVLAYOUT_CLI (default build/kvlayout); the declarations are
the repository's specs/.
"""
import ctypes
import importlib.util
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
KVLAYOUT = os.environ.get("KVLAYOUT_CLI", str(REPO / "build" / "kvlayout"))

# The first bit pattern written: bf16/fp16 patterns from here up are normal, finite, positive numbers, so
# no copy on the engine's write path can canonicalise them (NaN payloads) or flush them (subnormals).
PATTERN_BASE = 0x0080
PATTERN_LIMIT = 0x7F00  # below the bf16 exponent-all-ones range (Inf/NaN) and fp16's (0x7C00 is fp16 Inf)
FP16_PATTERN_LIMIT = 0x7C00


def _load_tensor_dump():
    # python/kvlayout/tensor_dump.py is standard library only; loaded by path so that the conformance
    # environment needs no build of kvlayout's extension module.
    spec = importlib.util.spec_from_file_location("kvlayout_tensor_dump", REPO / "python" / "kvlayout" / "tensor_dump.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tensor_dump = _load_tensor_dump()


def declaration(name):
    """The JSON of specs/engines/NAME.json."""
    return json.loads((SPECS / "engines" / f"{name}.json").read_text())


def observed_by(test_file):
    """The engine declarations whose `observed.test` names this test file, sorted."""
    rel = Path(test_file).resolve().relative_to(REPO).as_posix()
    names = []
    for path in sorted((SPECS / "engines").glob("*.json")):
        doc = json.loads(path.read_text())
        if doc.get("observed", {}).get("test") == rel:
            names.append(doc["name"])
    return names


def _run(args):
    return subprocess.run([KVLAYOUT, *args], capture_output=True, text=True)


def _options(cache, params, tables):
    args = ["--cache", cache]
    for k, v in (params or {}).items():
        args += ["--param", f"{k}={v}"]
    for k, v in (tables or {}).items():
        args += ["--table", f"{k}=" + ",".join(str(int(x)) for x in v)]
    return args


def check_geometry(layout, tensors, *, cache="small", params=None):
    """`kvlayout check LAYOUT --tensors DUMP` on the engine's tensors ({declared tensor name: a tensor or
    a list of instances}); asserts it says OK, else fails with kvlayout's finding (the first disagreeing
    axis, both values)."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.json"
        tensor_dump.dump_tensors(tensors, str(dump), generator="conformance/harness.py")
        r = _run(["check", layout, *_options(cache, params, None), "--tensors", str(dump), "--json"])
    if r.returncode != 0:
        raise AssertionError(f"kvlayout check {layout} --tensors: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def addresses(layout, *, cache="small", params=None, tables=None):
    """`kvlayout addr LAYOUT --all --json`: where the declaration puts every position."""
    r = _run(["addr", layout, *_options(cache, params, tables), "--all", "--json"])
    if r.returncode != 0:
        raise AssertionError(f"kvlayout addr {layout} --all: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def pattern(num_positions, limit=PATTERN_LIMIT):
    """One distinct 16-bit pattern per position (row-major over the content's coordinates)."""
    if PATTERN_BASE + num_positions > limit:
        raise ValueError(f"{num_positions} positions do not get distinct patterns below {limit:#x}: use a smaller cache")
    return (np.arange(num_positions, dtype=np.int64) + PATTERN_BASE).astype(np.uint16)


def _storage_bytes(t):
    """The whole allocation under a torch tensor, as a numpy uint8 array aliasing it (no copy). An instance
    given as {view name: tensor} (a declaration with several views of one allocation) is read through any of
    its views: they share the allocation."""
    if isinstance(t, dict):
        storages = {v.untyped_storage().data_ptr() for v in t.values()}
        if len(storages) != 1:
            raise AssertionError(f"the views {sorted(t)} are declared as one allocation but lie in {len(storages)}")
        t = next(iter(t.values()))
    storage = t.untyped_storage()
    n = storage.nbytes()
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(storage.data_ptr())) if n else np.zeros(0, np.uint8)


def read_back(layout, tensors, *, cache="small", params=None, tables=None):
    """Every held position's 16-bit element read from the engine's own tensors at the address the declaration
    gives it. tensors: {declared tensor name: [instance 0, instance 1, ...]} (torch tensors, or {view name:
    tensor} for several views; each instance's allocation is read from its start, as the declaration's offsets
    count). Returns (layout's addr document,
    values: uint16 per position, held: bool per position)."""
    doc = addresses(layout, cache=cache, params=params, tables=tables)
    if doc["element_bytes"] != 2:
        raise AssertionError(f"{layout}: the byte check reads 16-bit elements, the declaration has {doc['element_bytes']}-byte ones")
    storages = {}
    n = len(doc["addresses"])
    values = np.zeros(n, dtype=np.uint16)
    held = np.zeros(n, dtype=bool)
    for p, a in enumerate(doc["addresses"]):
        if a is None:
            continue
        t, instance, byte = a
        name = doc["tensors"][t]
        key = (name, instance)
        if key not in storages:
            inst = tensors[name]
            inst = inst if isinstance(inst, (list, tuple)) else [inst]
            storages[key] = _storage_bytes(inst[instance])
        raw = storages[key]
        if byte + 2 > raw.size:
            raise AssertionError(f"{layout}: position {p} at byte {byte} of {name}[{instance}], past its {raw.size}-byte allocation")
        values[p] = int(raw[byte]) | (int(raw[byte + 1]) << 8)
        held[p] = True
    return doc, values, held


def describe(doc, p):
    """Position p of an addr --all document in named coordinates: "(layer=1, kv=0, token=7, head=2, dim=5)"."""
    coords = np.unravel_index(p, doc["extents"])
    return "(" + ", ".join(f"{n}={int(c)}" for n, c in zip(doc["coords"], coords)) + ")"


def assert_pattern(layout, tensors, expected, *, cache="small", params=None, tables=None, written=None):
    """Reads every position back through the declaration and compares it with `expected` (uint16 per
    position, row-major over the content's coordinates). `written`: bool per position, the positions the
    engine's write path stored (default: all). Fails naming the first disagreeing position, where the
    declaration reads it and what it found. Returns the number of positions compared."""
    doc, values, held = read_back(layout, tensors, cache=cache, params=params, tables=tables)
    written = np.ones(len(values), dtype=bool) if written is None else np.asarray(written, dtype=bool)
    unheld = np.flatnonzero(written & ~held)
    if unheld.size:
        raise AssertionError(f"{layout}: the engine stored {describe(doc, unheld[0])} but the declaration does not hold it")
    compare = written & held
    bad = np.flatnonzero(compare & (values != expected))
    if bad.size:
        p = int(bad[0])
        a = doc["addresses"][p]
        found = int(values[p])
        owner = np.flatnonzero(expected == found)
        whose = f", the pattern of {describe(doc, int(owner[0]))}" if owner.size else ""
        raise AssertionError(
            f"{layout}: {bad.size} positions disagree; first {describe(doc, p)}: the declaration reads "
            f"{doc['tensors'][a[0]]}[{a[1]}] byte {a[2]} and finds {found:#06x}{whose}, expected {int(expected[p]):#06x}")
    return int(compare.sum())

"""The questions kvlayout answers, as Python functions. Each runs the CLI command of the same name in
this process and returns its ``--json`` document as a typed object; bad input raises SpecError with the
CLI's message (file, JSON path, found, expected)."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _inputs
from ._inputs import Declaration
from ._run import run, run_json
from .errors import InternalError, Refused, SpecError, Unknown
from .results import Address, CheckResult, LayoutInfo, Proof
from .tensor_dump import dump_tensors

__all__ = ["layouts", "address", "prove", "check", "plan_check", "plan_emit", "tensor_geometry"]

PathLike = Union[str, "os.PathLike[str]"]


def layouts(specs: Optional[PathLike] = None) -> List[LayoutInfo]:
    """Every layout declared under the specs directory, with its engine and source citation."""
    _, doc = run_json(["list", "--specs", _inputs.specs_dir(specs)])
    return [LayoutInfo.from_json(d) for d in doc]


def address(layout: Declaration, cache: Declaration, *, specs: Optional[PathLike] = None,
            params: Optional[Mapping[str, int]] = None, tables: Optional[Mapping[str, List[int]]] = None,
            **coord: Union[int, str]) -> Address:
    """Where one logical coordinate lives under ``layout`` on ``cache``, e.g.
    ``address("vllm-flash-nhd", "small", layer=1, kv="V", token=7, head=2, dim=5)``.

    ``tables`` gives block tables by name (identity by default). An Address with ``held=False`` means the
    layout does not hold the coordinate; ``in_bounds=False`` that its address leaves the tensor.
    """
    args = ["addr", _inputs.declaration(layout, "layout"), "--cache", _inputs.declaration(cache, "cache"),
            "--specs", _inputs.specs_dir(specs)] + _inputs.assignments("--param", params)
    for name, entries in (tables or {}).items():
        args += ["--table", "%s=%s" % (name, ",".join(str(int(e)) for e in entries))]
    args += ["%s=%s" % (name, value) for name, value in coord.items()]
    _, doc = run_json(args)
    return Address.from_json(doc)


def prove(source: Declaration, target: Declaration, cache: Declaration, *, specs: Optional[PathLike] = None,
          params: Optional[Mapping[str, int]] = None, source_params: Optional[Mapping[str, int]] = None,
          target_params: Optional[Mapping[str, int]] = None, limit_ms: Optional[int] = None) -> Proof:
    """Proves, or refutes with a counterexample, that moving a cache from ``source`` to ``target`` is exact
    over the whole index space of ``cache``.

    A layout or cache may be a name under ``specs``, a path, or a dict in the layout language.
    ``params`` overrides layout or cache-shape parameters on both sides; ``source_params`` /
    ``target_params`` bind one side's (e.g. ``tp_size``). An UNKNOWN grade is returned, not raised.
    """
    args = ["prove", _inputs.declaration(source, "layout"), _inputs.declaration(target, "layout"),
            "--cache", _inputs.declaration(cache, "cache"), "--specs", _inputs.specs_dir(specs)]
    args += _inputs.assignments("--param", params) + _inputs.assignments("--source-param", source_params)
    args += _inputs.assignments("--target-param", target_params) + _inputs.limit(limit_ms)
    _, doc = run_json(args)
    return Proof(doc)


def tensor_geometry(tensors: Any, *, names: Union[None, str, List[str]] = None) -> Dict[str, Any]:
    """The geometry dump of real tensors (torch tensors or numpy arrays: shape, strides, dtype, offsets,
    data pointers), as ``kvlayout check --tensors`` reads it.

    ``tensors``: ``{declared tensor name: tensor or list of tensors (instances 0, 1, ...)}``, an instance
    may be ``{view name: tensor}``; or a list of tensors with ``names`` (one name, or one per tensor).
    """
    return dump_tensors(tensors, names=names, generator="kvlayout.tensor_geometry")


def _dump_argument(tensors: Any) -> str:
    """A dump path, a dump dict, or the tensors themselves, as the file --tensors takes."""
    if isinstance(tensors, (str, os.PathLike)):
        return os.fspath(tensors)
    is_dump = isinstance(tensors, Mapping) and isinstance(tensors.get("tensors"), list) and all(
        isinstance(r, Mapping) for r in tensors["tensors"])
    return _inputs.document(tensors if is_dump else tensor_geometry(tensors), "tensors")


def _check_result(code: int, doc: Any, command: str) -> CheckResult:
    if not isinstance(doc, dict) or "verdict" not in doc:
        raise InternalError("kvlayout %s printed no verdict (exit %d)" % (command, code))
    return CheckResult(doc)


def check(real: Declaration, assumed: Optional[Declaration] = None, *, cache: Declaration,
          tensors: Any = None, assumed_offset: Optional[str] = None, assumed_tensor: Optional[str] = None,
          assumed_instance: Optional[str] = None, assumed_holds: Optional[str] = None, scope: Optional[str] = None,
          specs: Optional[PathLike] = None, params: Optional[Mapping[str, int]] = None,
          limit_ms: Optional[int] = None) -> CheckResult:
    """Checks what a connector or kernel assumes against the engine's real layout (``kvlayout check``).

    - ``check(real, assumed, cache=...)``: wherever ``assumed`` holds a position, ``real`` must store it at
      the same tensor, instance and element, under every block table (a refinement).
    - ``check(real, cache=..., assumed_offset="...")``: the assumption as an element-offset formula.
    - ``check(real, cache=..., tensors=...)``: ``real``'s declared geometry against real tensors (a dump
      path or dict, or the tensors themselves as :func:`tensor_geometry` takes them); with an assumption
      too, geometry is checked first.
    The verdict is ``OK`` or names what is wrong, with a counterexample.
    """
    if assumed is not None and assumed_offset is not None:
        raise SpecError("check: both an assumed layout and assumed_offset", path="assumed_offset",
                        found="assumed and assumed_offset", expected="one of them")
    args = ["check", _inputs.declaration(real, "layout")]
    if assumed is not None:
        args.append(_inputs.declaration(assumed, "layout"))
    args += ["--cache", _inputs.declaration(cache, "cache"), "--specs", _inputs.specs_dir(specs)]
    for flag, value in (("--assumed-offset", assumed_offset), ("--assumed-tensor", assumed_tensor),
                        ("--assumed-instance", assumed_instance), ("--assumed-holds", assumed_holds),
                        ("--scope", scope)):
        if value is not None:
            args += [flag, str(value)]
    if tensors is not None:
        args += ["--tensors", _dump_argument(tensors)]
    args += _inputs.assignments("--param", params) + _inputs.limit(limit_ms)
    code, doc = run_json(args)
    return _check_result(code, doc, "check")


def plan_check(source: Declaration, target: Declaration, cache: Declaration, plan: Union[PathLike, Mapping[str, Any]], *,
               specs: Optional[PathLike] = None, params: Optional[Mapping[str, int]] = None,
               limit_ms: Optional[int] = None) -> CheckResult:
    """Checks a transfer plan a connector wrote (descriptor lists, strided runs, slot maps or symbolic
    families; schema specs/plans.md) against the two layouts (``kvlayout plan check``)."""
    args = ["plan", "check", _inputs.declaration(source, "layout"), _inputs.declaration(target, "layout"),
            "--cache", _inputs.declaration(cache, "cache"), "--plan", _inputs.document(plan, "plan"),
            "--specs", _inputs.specs_dir(specs)] + _inputs.assignments("--param", params) + _inputs.limit(limit_ms)
    code, doc = run_json(args)
    return _check_result(code, doc, "plan check")


def plan_emit(source: Declaration, target: Declaration, cache: Declaration, *, format: str = "families",
              tables: Optional[Mapping[str, List[int]]] = None, base: Optional[Mapping[str, int]] = None,
              scope: Optional[str] = None, specs: Optional[PathLike] = None, params: Optional[Mapping[str, int]] = None,
              source_params: Optional[Mapping[str, int]] = None, target_params: Optional[Mapping[str, int]] = None,
              limit_ms: Optional[int] = None) -> Dict[str, Any]:
    """The verified transfer plan of a proven pair, as plan JSON that :func:`plan_check` accepts
    (``kvlayout plan emit``): ``format`` families, runs or descriptors; ``tables`` as
    ``{"source.block_table": [3, 0, 1, 2]}``; ``base`` as ``{"source": 0x1000}``.

    Raises :class:`kvlayout.Refused` when the pair is not EXACT_BYTE, EXACT_TOKEN or SUBSET and
    :class:`kvlayout.Unknown` when its proof is UNKNOWN.
    """
    args = ["plan", "emit", _inputs.declaration(source, "layout"), _inputs.declaration(target, "layout"),
            "--cache", _inputs.declaration(cache, "cache"), "--format", format, "--specs", _inputs.specs_dir(specs)]
    for name, entries in (tables or {}).items():
        args += ["--table", "%s=%s" % (name, ",".join(str(int(e)) for e in entries))]
    for side, value in (base or {}).items():
        args += ["--base", "%s=%d" % (side, value)]
    if scope is not None:
        args += ["--scope", scope]
    args += _inputs.assignments("--param", params) + _inputs.assignments("--source-param", source_params)
    args += _inputs.assignments("--target-param", target_params) + _inputs.limit(limit_ms)
    code, out, err = run(args + ["--json"])
    if code == 0:
        return json.loads(out)
    # Refused or unknown: the proof says why (the same question, asked as kvlayout prove does).
    proof = prove(source, target, cache, specs=specs, params=params, source_params=source_params,
                  target_params=target_params, limit_ms=limit_ms)
    if code == 3:
        raise Unknown(err.strip(), proof)
    raise Refused(err.strip(), proof)

"""Relayout: a proven, compiled relayout kernel as a Python callable on numpy arrays and torch tensors."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _core, _inputs
from ._inputs import Declaration
from ._run import run
from .errors import CompileError, InternalError, Refused, SpecError, Unknown
from .results import EXACT_GRADES, Proof

__all__ = ["Relayout"]

_FUNCTION = "kvlayout_relayout"


def _file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _declaration_hashes(path: str) -> List[str]:
    """The hash of a declaration file and, for a thin instance, of the family it binds (beside it)."""
    hashes = [_file_hash(path)]
    try:
        family = json.loads(Path(path).read_text()).get("instance_of")
    except (OSError, ValueError, AttributeError):
        family = None
    if isinstance(family, str):
        sibling = Path(path).parent / (family + ".json")
        if sibling.is_file():
            hashes.append(_file_hash(str(sibling)))
    return hashes


class Relayout:
    """Moves a KV cache from ``source``'s layout to ``target``'s with a generated, verified kernel.

    Construction proves the pair on ``cache`` (refusing a move that is not exact with
    :class:`kvlayout.Refused`, carrying the grade and counterexample; :class:`kvlayout.Unknown` when the
    solver gives no answer), emits the kernel and compiles it once with the system compiler (``$CXX``,
    else ``c++``; ``nvcc`` for ``device="cuda"``). Compiled kernels are cached on disk under
    ``$KVLAYOUT_CACHE_DIR`` (default ``~/.cache/kvlayout``) by the hashes of both declarations and the
    cache shape, the parameters, the device, the compiler and flags and the tool version; a cached kernel
    is loaded without proving or compiling again.

    Call it as ``relayout(src_buffers, dst_buffers, src_tables, dst_tables, num_tokens, threads=1)``:
    buffers are lists of C-contiguous numpy arrays or torch tensors, one per tensor instance in the order
    of :attr:`abi` (``abi["source"]["buffers"]``), of the declared element type (or an unsigned integer
    of its width holding the raw bits: numpy has no bfloat16); tables are int32 arrays. Everything is
    checked before the kernel runs (:class:`kvlayout.ArgumentError` names the argument); a kernel that
    refuses its tables raises :class:`kvlayout.KernelError` and writes nothing.
    """

    def __init__(self, source: Declaration, target: Declaration, cache: Declaration, *, device: str = "cpu",
                 params: Optional[Mapping[str, int]] = None, specs: Optional[Any] = None,
                 limit_ms: Optional[int] = None, allow_subset: bool = False, compiler: Optional[str] = None,
                 flags: Optional[Sequence[str]] = None, cache_dir: Optional[Any] = None):
        if device not in ("cpu", "cuda"):
            raise SpecError("device %r" % (device,), path="device", found=repr(device), expected="\"cpu\" or \"cuda\"")
        self.device = device
        specs_dir = _inputs.specs_dir(specs)
        source_arg = _inputs.declaration(source, "layout")
        target_arg = _inputs.declaration(target, "layout")
        cache_arg = _inputs.declaration(cache, "cache")
        flags = list(flags) if flags is not None else ["-O2"]
        compiler = compiler or ""
        # Phase 1: the cache key, from what the kernel is made of.
        files = [_core.find_layout(specs_dir, source_arg), _core.find_layout(specs_dir, target_arg),
                 _core.find_cache(specs_dir, cache_arg)]
        key_material = {
            "tool": _core.version(), "source": _declaration_hashes(files[0]), "target": _declaration_hashes(files[1]),
            "cache": _file_hash(files[2]), "params": sorted((params or {}).items()), "device": device,
            "compiler": compiler or os.environ.get("NVCC" if device == "cuda" else "CXX", ""), "flags": flags,
            "allow_subset": allow_subset,
        }
        self.key = hashlib.sha256(json.dumps(key_material, sort_keys=True).encode()).hexdigest()[:32]
        root = Path(cache_dir) if cache_dir is not None else _inputs.cache_dir()
        entry = root / "kernels" / self.key
        # Phase 2: a kernel compiled before, or prove, emit and compile it now.
        meta_file = entry / "meta.json"
        if meta_file.is_file() and (entry / "kernels0.so").is_file():
            meta = json.loads(meta_file.read_text())
            self.proof = Proof(meta["proof"])
            self.abi: Dict[str, Any] = meta["abi"]
            self._kernel = _core.load_kernel(str(entry / "kernels0.so"), json.dumps(self.abi))
            self.cached = True
        else:
            self.proof, self.abi, kernel_text = self._prove_and_emit(
                ["emit", source_arg, target_arg, "--cache", cache_arg, "--specs", specs_dir, "--target", device,
                 "--name", _FUNCTION] + _inputs.assignments("--param", params) + _inputs.limit(limit_ms),
                allow_subset)
            self._kernel = self._compile(kernel_text, entry, flags, compiler)
            self.cached = False
        # @post self._kernel checks every call against self.abi

    def _prove_and_emit(self, args: List[str], allow_subset: bool):
        code, out, err = run(args + ["--json"])
        try:
            doc = json.loads(out)
        except ValueError:
            raise InternalError("kvlayout emit printed no JSON (exit %d): %s" % (code, err.strip()))
        proof = Proof(doc["proof"])
        if proof.grade == "UNKNOWN":
            raise Unknown("%s -> %s on %s: the proof is UNKNOWN (a solver limit); nothing compiled"
                          % (proof.source, proof.target, proof.cache), proof)
        allowed = EXACT_GRADES + (("SUBSET",) if allow_subset else ())
        if proof.grade not in allowed or doc.get("kernel") is None:
            raise Refused("%s -> %s on %s is %s [%s]: %s%s" % (
                proof.source, proof.target, proof.cache, proof.grade, proof.reason.get("code"),
                proof.reason.get("message"), "; unblocked by: " + proof.unblocked_by if proof.unblocked_by else ""), proof)
        return proof, doc["abi"], doc["kernel"]

    def _compile(self, kernel_text: str, entry: Path, flags: List[str], compiler: str):
        entry.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="compiling-", dir=str(entry.parent)))
        try:
            kernel = _core.compile_kernel(kernel_text, str(work), json.dumps(self.abi), self.device, compiler, flags)
            (work / "meta.json").write_text(json.dumps({"proof": self.proof.to_json(), "abi": self.abi}, indent=1))
            try:
                os.rename(work, entry)  # atomic: another process compiling the same kernel may have won
            except OSError:
                shutil.rmtree(work, ignore_errors=True)
            return kernel
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    @property
    def max_tokens(self) -> int:
        """The largest ``num_tokens`` a call takes (the cache shape's capacity)."""
        return int(self.abi["max_tokens"])

    def __call__(self, src_buffers: Sequence[Any], dst_buffers: Sequence[Any], src_tables: Sequence[Any] = (),
                 dst_tables: Sequence[Any] = (), num_tokens: Optional[int] = None, threads: int = 1) -> None:
        """Moves tokens ``0 .. num_tokens-1`` (default: all) from ``src_buffers`` into ``dst_buffers``."""
        self._kernel(src_buffers, dst_buffers, src_tables, dst_tables,
                     self.max_tokens if num_tokens is None else num_tokens, threads)

    def new_buffers(self, side: str) -> List[Any]:
        """Zeroed numpy arrays of the sizes one side's buffers must have (raw unsigned integers of the
        element width: numpy has no bfloat16 or fp8)."""
        import numpy as np
        if side not in ("source", "destination"):
            raise SpecError("side %r" % (side,), path="side", found=repr(side), expected="\"source\" or \"destination\"")
        raw = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
        return [np.zeros(b["elements"], dtype=raw[b["element_bytes"]]) for b in self.abi[side]["buffers"]]

    def __repr__(self) -> str:
        return "Relayout(%s -> %s on %s, %s, %s)" % (self.proof.source, self.proof.target, self.proof.cache,
                                                     self.proof.grade, self.device)

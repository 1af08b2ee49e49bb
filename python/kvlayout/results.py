"""Typed views of the JSON documents the commands print. Each keeps the document it was read from:
``to_json()`` returns it unchanged (the CLI's ``--json`` output for the same question)."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["Obligation", "Proof", "CheckResult", "Address", "LayoutInfo", "EXACT_GRADES", "GRADES"]

# The six grades, best first (verdict/grade.hpp).
GRADES = ("EXACT_BYTE", "EXACT_TOKEN", "SUBSET", "NOT_EXACT", "REFUSED", "UNKNOWN")
EXACT_GRADES = ("EXACT_BYTE", "EXACT_TOKEN")


@dataclass(frozen=True)
class Obligation:
    """One proof obligation (or precondition) and how it was decided."""

    name: str
    side: str
    status: str                      # proved, refuted, unknown, skipped, ...
    method: str
    detail: str
    ms: float
    reason: Optional[str]            # the reason code of a finding
    counterexample: Optional[dict]   # re-checked witness, in named coordinates

    @staticmethod
    def from_json(doc: dict) -> "Obligation":
        return Obligation(name=doc.get("name", ""), side=doc.get("side", ""), status=doc.get("status", ""),
                          method=doc.get("method", ""), detail=doc.get("detail", ""), ms=float(doc.get("ms", 0.0)),
                          reason=doc.get("reason"), counterexample=doc.get("counterexample"))


class Proof:
    """The answer of :func:`kvlayout.prove`: grade, reason, what would unblock it, the obligations and
    the deciding counterexample. ``to_json()`` is ``kvlayout prove --json``'s document."""

    def __init__(self, doc: dict):
        self._doc = doc
        self.source: str = doc["source"]
        self.target: str = doc["target"]
        self.cache: str = doc["cache"]
        self.grade: str = doc["grade"]
        self.reason: dict = doc["reason"]            # {"code", "message"}
        self.unblocked_by: Optional[str] = doc.get("unblocked_by")
        self.preconditions: List[Obligation] = [Obligation.from_json(o) for o in doc.get("preconditions", [])]
        self.obligations: List[Obligation] = [Obligation.from_json(o) for o in doc.get("obligations", [])]
        self.ms: float = float(doc.get("ms", 0.0))
        self.assignment: Optional[list] = doc.get("assignment")  # rank families: which source rank feeds which target rank

    @property
    def exact(self) -> bool:
        """EXACT_BYTE or EXACT_TOKEN: every position the source holds arrives, unchanged."""
        return self.grade in EXACT_GRADES

    @property
    def counterexample(self) -> Optional[dict]:
        """The witness of the finding that decided the grade (None when every obligation was proved):
        positions in named coordinates, where each side stores them, and the tables used."""
        findings = [o for o in self.preconditions + self.obligations if o.status != "proved" and o.counterexample]
        for o in findings:
            if o.reason == self.reason.get("code"):
                return o.counterexample
        return findings[0].counterexample if findings else None

    def to_json(self) -> dict:
        return copy.deepcopy(self._doc)

    def __repr__(self) -> str:
        return "Proof(%s -> %s on %s: %s [%s])" % (self.source, self.target, self.cache, self.grade, self.reason.get("code"))


class CheckResult:
    """The answer of :func:`kvlayout.check` and :func:`kvlayout.plan_check`: a verdict (``OK`` or what
    is wrong), its message and counterexample. ``to_json()`` is the command's ``--json`` document."""

    def __init__(self, doc: dict):
        self._doc = doc
        self.verdict: str = doc["verdict"]
        self.message: str = doc.get("message", "")
        self.counterexample: Optional[dict] = doc.get("counterexample")

    @property
    def ok(self) -> bool:
        return self.verdict == "OK"

    @property
    def steps(self) -> List[dict]:
        """The checks made, in order (geometry, content, tables, ... for a refinement check)."""
        return list(self._doc.get("obligations", []))

    def to_json(self) -> dict:
        return copy.deepcopy(self._doc)

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return "CheckResult(%s: %s)" % (self.verdict, self.message)


@dataclass(frozen=True)
class Address:
    """Where one logical coordinate lives under a layout (``kvlayout addr --json``)."""

    held: bool
    in_bounds: bool = False
    tensor: Optional[str] = None
    view: Optional[str] = None
    instance: Optional[int] = None
    offset: Optional[int] = None        # element offset in the tensor instance
    byte_offset: Optional[int] = None
    index: List[int] = field(default_factory=list)
    violation: Optional[str] = None

    @staticmethod
    def from_json(doc: dict) -> "Address":
        return Address(held=doc["held"], in_bounds=doc.get("in_bounds", False), tensor=doc.get("tensor"),
                       view=doc.get("view"), instance=doc.get("instance"), offset=doc.get("offset"),
                       byte_offset=doc.get("byte_offset"), index=list(doc.get("index", [])),
                       violation=doc.get("violation"))


@dataclass(frozen=True)
class LayoutInfo:
    """One declared layout (``kvlayout list --json``)."""

    name: str
    engine: str
    content: str
    dtype: str
    control: bool
    cite: Optional[dict]
    ranks: Optional[dict]
    instance_of: Optional[str]
    file: str

    @staticmethod
    def from_json(doc: dict) -> "LayoutInfo":
        return LayoutInfo(**{k: doc.get(k) for k in ("name", "engine", "content", "dtype", "control", "cite", "ranks",
                                                     "instance_of", "file")})

"""The exceptions kvlayout raises. Each carries what the CLI prints for the same failure."""
from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "KvlayoutError", "SpecError", "ArgumentError", "InternalError", "Unknown", "Refused", "CompileError",
    "KernelError",
]


class KvlayoutError(Exception):
    """Base class of every kvlayout exception."""


class SpecError(KvlayoutError, ValueError):
    """Bad input (the CLI's exit code 2): a spec, cache shape, coordinate, parameter or flag.

    ``file`` and ``path`` (a JSON pointer) say where, ``found`` and ``expected`` what; ``str(e)`` is the
    CLI's message.
    """

    def __init__(self, message: str, file: str = "", path: str = "", found: str = "", expected: str = ""):
        super().__init__(message)
        self.file = file
        self.path = path
        self.found = found
        self.expected = expected


class ArgumentError(SpecError):
    """A call argument that does not match a kernel's ABI; ``path`` names it (e.g. ``dst_buffers[2]``)."""


class InternalError(KvlayoutError):
    """A bug in kvlayout (the CLI's exit code 4), never a grade."""


class Unknown(KvlayoutError):
    """The solver gave no answer within its limits (the CLI's exit code 3); ``proof`` holds what was found."""

    def __init__(self, message: str, proof: Any = None):
        super().__init__(message)
        self.proof = proof


class Refused(KvlayoutError):
    """A move kvlayout will not perform because it is not exact (``Relayout`` of a non-exact pair).

    ``grade``, ``reason``, ``unblocked_by`` and ``counterexample`` are the proof's; ``proof`` is the
    whole :class:`kvlayout.Proof`.
    """

    def __init__(self, message: str, proof: Any):
        super().__init__(message)
        self.proof = proof
        self.grade: str = proof.grade
        self.reason: dict = proof.reason
        self.unblocked_by: Optional[str] = proof.unblocked_by
        self.counterexample: Optional[dict] = proof.counterexample


class CompileError(KvlayoutError):
    """The system compiler (or nvcc) failed on an emitted kernel; the message holds its command and output."""


class KernelError(KvlayoutError):
    """A kernel returned a non-zero code (``code``, ``meaning``); it wrote nothing."""

    def __init__(self, message: str, code: int = 0, meaning: str = ""):
        super().__init__(message)
        self.code = code
        self.meaning = meaning

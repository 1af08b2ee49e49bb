"""Runs one CLI command in this process (kvlayout._core.run) and turns its failures into exceptions."""
from __future__ import annotations

import json
from typing import Any, List, Tuple

from . import _core
from .errors import InternalError, SpecError


def run(args: List[str]) -> Tuple[int, str, str]:
    """(exit_code, stdout, stderr) of ``kvlayout ARGS...``; bad input raises SpecError, a kvlayout bug
    InternalError (exit codes 2 and 4 never come back)."""
    code, out, err, spec_error, internal = _core.run([str(a) for a in args])
    if spec_error is not None:
        raise SpecError(*spec_error)
    if code == 2:  # bad input reported without a SpecError (e.g. an unknown command)
        raise SpecError(err.strip() or "bad input", found=" ".join(args), expected="a valid kvlayout command line")
    if code == 4:
        raise InternalError(internal or err.strip())
    return code, out, err


def run_json(args: List[str]) -> Tuple[int, Any]:
    """run() with --json: the exit code and the parsed document."""
    code, out, err = run(list(args) + ["--json"])
    try:
        return code, json.loads(out)
    except ValueError:
        raise InternalError("kvlayout %s printed no JSON document (exit %d): %s" % (args[0], code, (err or out).strip()))

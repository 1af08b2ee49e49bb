"""How the Python API names its inputs on the command line it runs: specs directory, layouts and cache
shapes (a name, a path, or a dict in the layout language), parameters, and JSON documents."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from . import _core
from .errors import SpecError

Declaration = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def specs_dir(specs: Optional[Union[str, "os.PathLike[str]"]] = None) -> str:
    """The specs directory a call reads: ``specs``, else ``$KVLAYOUT_SPECS``, else the specs installed with
    the package, else the source tree's specs/ (the package used from a build tree)."""
    if specs is not None:
        return os.fspath(specs)
    env = os.environ.get("KVLAYOUT_SPECS")
    if env:
        return env
    packaged = Path(__file__).resolve().parent / "specs"
    if packaged.is_dir():
        return str(packaged)
    return _core.source_specs_dir()


def cache_dir() -> Path:
    """Where kvlayout keeps compiled kernels and inline declarations: ``$KVLAYOUT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/kvlayout``, else ``~/.cache/kvlayout``."""
    env = os.environ.get("KVLAYOUT_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kvlayout"


def write_document(document: Mapping[str, Any], kind: str) -> str:
    """Writes a JSON document (an inline layout, cache shape, plan or tensor dump) to
    ``CACHE/inline/HASH/NAME.json`` (HASH of its content, NAME its "name") and returns the path; the same
    document is written once."""
    try:
        text = json.dumps(document, indent=1, sort_keys=False)
    except (TypeError, ValueError) as e:
        raise SpecError("an inline %s that is not JSON: %s" % (kind, e), found="a %s that json.dumps refuses" % type(document).__name__,
                        expected="a dict of JSON values") from None
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    # The loader wants a declaration's name to be its file's stem: one folder per content, the name inside.
    name = document.get("name") if isinstance(document.get("name"), str) else kind
    stem = name if name and all(c.isalnum() or c in "-_." for c in name) and not name.startswith(".") else kind
    folder = cache_dir() / "inline" / digest
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (stem + ".json")
    if not path.exists():
        tmp = folder / (".%s.tmp%d" % (stem, os.getpid()))
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
    return str(path)


def declaration(value: Declaration, kind: str) -> str:
    """A layout or cache shape as the CLI takes it: a name or path as given; a dict written to a file."""
    return _file_argument(value, kind, "a %s name, a path to its JSON file, or a dict in the layout language" % kind)


def document(value: Union[str, "os.PathLike[str]", Mapping[str, Any]], kind: str) -> str:
    """A JSON document argument (plan, tensor dump): a path as given, a dict written to a file."""
    return _file_argument(value, kind, "a path to a %s JSON file or a dict" % kind)


def _file_argument(value: Any, kind: str, expected: str) -> str:
    if isinstance(value, Mapping):
        return write_document(value, kind)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise SpecError("a %s given as %s" % (kind, type(value).__name__), found=type(value).__name__, expected=expected)


def assignments(flag: str, values: Optional[Mapping[str, int]]) -> list:
    """``{"block_size": 32}`` -> ``["--param", "block_size=32"]`` (integers only, as the CLI takes them)."""
    out = []
    for name, value in (values or {}).items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError("%s %s=%r: not an integer" % (flag, name, value), path=flag, found=repr(value),
                            expected="an integer value for %s" % name)
        out += [flag, "%s=%d" % (name, value)]
    return out


def limit(limit_ms: Optional[int]) -> list:
    return [] if limit_ms is None else ["--limit-ms", str(limit_ms)]

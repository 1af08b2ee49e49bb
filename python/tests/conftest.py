"""Shared fixtures: a private kernel cache per test session, the CLI binary for comparisons, and the
pattern fill used by the relayout tests."""
import os
import shutil

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Compiled kernels and inline declarations go to a fresh directory: every session compiles once."""
    path = tmp_path_factory.mktemp("kvlayout-cache")
    old = os.environ.get("KVLAYOUT_CACHE_DIR")
    os.environ["KVLAYOUT_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["KVLAYOUT_CACHE_DIR"]
    else:
        os.environ["KVLAYOUT_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def cli():
    """The kvlayout executable ($KVLAYOUT_CLI, set by ctest, or one on PATH)."""
    path = os.environ.get("KVLAYOUT_CLI") or shutil.which("kvlayout")
    if not path:
        pytest.skip("no kvlayout executable: set $KVLAYOUT_CLI (ctest does) to compare with the CLI")
    return path


def strip_timings(doc):
    """A JSON document without its measured times ("ms"), which differ between two runs."""
    if isinstance(doc, dict):
        return {k: strip_timings(v) for k, v in doc.items() if k != "ms"}
    if isinstance(doc, list):
        return [strip_timings(v) for v in doc]
    return doc

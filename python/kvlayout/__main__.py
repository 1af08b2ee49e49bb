"""``python -m kvlayout ARGS...`` (and the ``kvlayout`` command a pip install puts on PATH): the CLI, run
in-process, reading the specs shipped with the package unless ``--specs`` or ``$KVLAYOUT_SPECS`` says
otherwise."""
import os
import sys

from . import _core, _inputs


def main() -> int:
    os.environ.setdefault("KVLAYOUT_SPECS", _inputs.specs_dir())
    sys.stdout.flush()
    return _core.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

"""``lockstep`` (the console script) and ``python -m lockstep``: the lockstep command line.

The CLI is the same Rust code as the ``lockstep`` binary, linked into the native module; its
other-process check re-runs ``python -m lockstep``.
"""

import signal
import sys

from . import _native


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    # The Rust code runs with the GIL released and never returns to Python's signal handler
    # until it ends: Ctrl-C must stop it the way it stops the binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    return _native.cli_main(["lockstep"] + args, [sys.executable, "-m", "lockstep"])


if __name__ == "__main__":
    sys.exit(main())

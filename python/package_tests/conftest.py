"""Tests of the installed package ``lockstep`` (built by maturin; see scripts/test).

Run from this directory (``python -m pytest`` puts the current directory first on
``sys.path``, and from ``python/`` that would shadow the installed package with its sources,
which lack the native module). Tests that compare with the command line find the ``lockstep``
binary through ``LOCKSTEP_BIN``, else ``target/release/lockstep`` of this checkout; a missing
binary is a failure, never a skip.
"""

import os
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _cli_path():
    path = os.environ.get("LOCKSTEP_BIN") or os.path.join(REPO, "target", "release", "lockstep")
    if not os.access(path, os.X_OK):
        pytest.fail(f"the lockstep binary is missing at {path}: cargo build --release -p lockstep-cli, or set LOCKSTEP_BIN")
    return path


@pytest.fixture(scope="session")
def cli():
    """Runs the lockstep binary: ``cli(*args, input=bytes) -> CompletedProcess``."""
    path = _cli_path()

    def run(*args, input=None, check=True):
        out = subprocess.run([path, *args], input=input, capture_output=True, timeout=600)
        if check and out.returncode != 0:
            raise AssertionError(f"lockstep {' '.join(args)} exited {out.returncode}: {out.stderr.decode()}")
        return out

    run.path = path
    return run

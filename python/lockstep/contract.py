"""Reset contracts proposed from what an env touches: ``lockstep contract infer`` in Python.

An env's own attributes are its default contract; what they miss is state outside the
process (a cache file, a database, a service). :func:`infer` watches the env for a few seeds,
each in a fresh interpreter, and returns the contract file of docs/contract.md with a probed
layer for every directory it wrote, database file it opened and endpoint it called, each
commented with the line of the env's code that did it. ``lockstep.check`` does not take a
file; the CLI's ``lockstep check --contract FILE --cmd -- ...`` audits those layers.
"""

import os
import sys
import tempfile

from . import _native
from ._envs import resolve as _resolve
from ._errors import ConfigError, EnvError
from ._errors import count as _count


def infer(env, seeds: int = 2, steps: int = 20, out=None) -> str:
    """The proposed contract (TOML text) of ``env``: a Gymnasium id, a ``"module:function"``
    string or a range name (an env given as a lambda cannot be started in a fresh
    interpreter, where the watching happens). Writes it to ``out`` too when given (a path;
    written atomically). Raises :class:`EnvError` when the env cannot be watched."""
    seeds = _count("seeds to watch", seeds, 1)
    steps = _count("steps per trial", steps, 1)
    source = _resolve(env)
    if source.argv is None:
        raise ConfigError(f"contract.infer watches the env in a fresh interpreter: {source.skip_reason}")
    with tempfile.TemporaryDirectory(prefix="lockstep-infer-") as tmp:
        path = os.path.join(tmp, "contract.toml")
        args = ["lockstep", "contract", "infer", "--seeds", str(seeds), "--steps", str(steps), "--out", path, "--cmd", "--"]
        saved = {k: os.environ.get(k) for k, _ in source.child_env}
        try:
            os.environ.update(dict(source.child_env))
            sys.stdout.flush()
            sys.stderr.flush()
            code = _native.cli_main(args + list(source.argv), [sys.executable, "-m", "lockstep"])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if code != 0 or not os.path.exists(path):
            raise EnvError(f"lockstep contract infer of {source.env_id} failed (exit {code}); its error is on stderr above")
        with open(path, encoding="utf-8") as f:
            text = f.read()
    if out is not None:
        _write_atomic(out, text)
    return text


def _write_atomic(path, text):
    """Writes ``text`` atomically, keeping the mode of a file it replaces."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".lockstep-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask

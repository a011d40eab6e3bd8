"""lockstep: prove or disprove "fixed seed, same episode" for agent and RL environments.

The Rust core (the same code as the ``lockstep`` command line) runs inside this package, so a
fingerprint, a diff, a trace or a check computed here has the CLI's bytes and verdicts::

    import lockstep
    lockstep.fingerprint({"seed": 0, "cache": None})       # == hashlib.sha256(json.dumps(...))
    report = lockstep.check("CartPole-v1", seeds=range(3), steps=50)
    assert report.passed, report.failures
    env = lockstep.range.parallel_env("ransomware", preset="easy")   # a PettingZoo ParallelEnv

The API is documented in docs/python.md.
"""

from typing import Any

from . import _native
from ._diff import MISSING, Change, Diff, diff
from ._errors import CanonicalError, ConfigError, EnvError, GoldenError, LockstepError

__version__ = _native.__version__

PROFILES = ("python", "python-strict", "jcs")


def canonical(obj: Any, profile: str = "python") -> bytes:
    """The canonical JSON bytes of ``obj``.

    ``profile="python"`` gives exactly ``json.dumps(obj, sort_keys=True, separators=(",",
    ":")).encode()`` for every value ``json.dumps`` accepts with ``str`` keys: dicts, lists,
    tuples, ``str``, ``int`` of any size, ``float`` (NaN and infinities written as Python
    writes them), ``bool``, ``None`` and their subclasses. ``"python-strict"`` refuses NaN and
    infinities (``allow_nan=False``); ``"jcs"`` is RFC 8785.

    Raises :class:`CanonicalError` (a ``ValueError``), naming the JSON Pointer, for what has no
    canonical form: numpy scalars other than ``numpy.float64`` and numpy arrays (``json.dumps``
    refuses them too; convert with ``.item()`` / ``.tolist()``), dict keys that are not ``str``
    (``json.dumps`` sorts those in Python order, not as text), lone surrogates, and under
    ``jcs`` NaN, infinities and integers a double cannot hold exactly.
    """
    return _native.canonical(obj, profile)


def fingerprint(obj: Any, profile: str = "python") -> str:
    """The SHA-256 of :func:`canonical` bytes, 64 lowercase hex digits.

    With the ``python`` profile this equals ``hashlib.sha256(json.dumps(obj, sort_keys=True,
    separators=(",", ":")).encode()).hexdigest()``, and ``lockstep fingerprint`` on the same
    JSON. Raises :class:`CanonicalError` as :func:`canonical` does.
    """
    return _native.fingerprint(obj, profile)


__all__ = [
    "PROFILES",
    "MISSING",
    "Change",
    "Diff",
    "canonical",
    "diff",
    "fingerprint",
    "LockstepError",
    "CanonicalError",
    "ConfigError",
    "EnvError",
    "GoldenError",
]

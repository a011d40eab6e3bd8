"""Golden trajectory files from Python: the CLI's ``lockstep golden record`` and ``verify``
(format in docs/golden.md)."""

import datetime
import os

from . import _native
from ._errors import count
from ._envs import resolve

__all__ = ["record", "verify"]


def record(env, path, seed=0, steps=100, date=None):
    """Records a golden file of ``env`` (named as for :func:`lockstep.check`) at ``path``;
    refuses to overwrite one (:class:`lockstep.GoldenError`). Returns the episode digest."""
    source = resolve(env)
    date = date or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    seed = count("a seed", seed, 0)
    steps = count("steps per rollout", steps, 1, " (0 would check nothing past the reset)")
    return _native.golden_record(source.make, source.env_id, os.fspath(path), seed, steps, date)


class Verification:
    """What :func:`verify` found: ``passed``, a ``summary`` line and the first ``divergence``
    (a dict, or ``None``)."""

    def __init__(self, passed, summary, divergence):
        self.passed = passed
        self.summary = summary
        self.divergence = divergence

    def __bool__(self):
        return self.passed

    def __repr__(self):
        return f"<lockstep.golden.Verification passed={self.passed}: {self.summary}>"


def verify(path, env=None):
    """Re-runs the golden file's seed and steps and compares every step. ``env`` defaults to
    the env the file names (a ``module:function``, Gymnasium id or range name); give it for an
    env recorded from a lambda."""
    path = os.fspath(path)
    source = resolve(env if env is not None else _native.golden_env(path))
    return Verification(*_native.golden_verify(source.make, source.env_id, path))

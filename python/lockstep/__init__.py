"""lockstep: prove or disprove "fixed seed, same episode" for agent and RL environments.

The Rust core (the same code as the ``lockstep`` command line) runs inside this package, so a
fingerprint, a diff, a trace or a check computed here has the CLI's bytes and verdicts::

    import lockstep
    lockstep.fingerprint({"seed": 0, "cache": None})       # == hashlib.sha256(json.dumps(...))
    report = lockstep.check("CartPole-v1", seeds=range(3), steps=50)
    assert report.passed, report      # the CLI's text: failures grouped across seeds
    env = lockstep.range.parallel_env("ransomware", preset="easy")   # a PettingZoo ParallelEnv

The API is documented in docs/python.md.
"""

import os
from typing import Any, Iterable, Optional, Sequence

from . import _native
from ._diff import MISSING, Change, Diff, diff
from ._envs import resolve as _resolve
from ._errors import CanonicalError, ConfigError, EnvError, GoldenError, LockstepError
from ._errors import count as _count
from ._report import Failure, Report
from ._report import replay_for as _replay_for

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


#: The checks run by default, in the CLI's order (``lockstep check --checks``).
CHECKS = ("same", "other", "interleaved", "process", "parallel", "continuation", "leftover", "vector")
#: Checks run only when named in ``checks``: ``fork`` (a worker forked from a warm process:
#: an external env whose child can fork; not applicable to an env object of this interpreter).
OPTIONAL_CHECKS = ("fork",)


def check(
    env,
    seeds: Iterable[int] = range(5),
    steps: int = 200,
    checks: Optional[Sequence[str]] = None,
    contract=None,
    rollouts: Optional[int] = None,
    seedless: bool = False,
    budget=None,
    policy=None,
    ignore: Sequence[str] = (),
    timings: bool = False,
) -> Report:
    """Runs ``lockstep check`` on a Python env, in this process: the reset-contract audit and
    the replay checks, with the CLI's verdicts and report.

    ``env`` is a zero-argument callable returning a Gymnasium env or a PettingZoo env (parallel
    or AEC), a ``"module:function"`` string, a Gymnasium id or a range name. ``checks``
    defaults to all of :data:`CHECKS`, the CLI's default list (docs/replay.md): ``same``,
    ``other``, ``interleaved`` and ``parallel`` (instances in this interpreter, each compared
    with its seed alone in a fresh interpreter when the env can be started by name),
    ``process`` (a fresh interpreter), ``continuation`` (``reset(seed)`` once, then episodes
    after ``reset()`` without a seed), ``leftover`` (what one process leaves in the home
    directory for the next) and ``vector`` (a vector env's sub-envs against single envs). The
    process check needs the env importable by name; for a lambda or a local function it is
    skipped, with the reason in ``Report.skipped``, and never counted as passed; the checks
    that need a fresh interpreter otherwise say in their summary what they compared with
    instead, or are not applicable. The reset contract is every attribute of
    ``env.unwrapped`` unless ``contract`` names its ``fields`` (``{"name", "version",
    "fields"}``) or leaves some out (``{"exclude": [...]}``; docs/protocol.md). A path
    (``str`` or ``os.PathLike``) to a contract file, TOML or JSON (docs/contract.md; what
    :func:`lockstep.contract.infer` writes), holds the env to that contract instead, as
    ``lockstep check --contract FILE`` does: its probed layers (a directory, an SQLite file,
    a service, a browser) are read after every reset.

    The other arguments are the CLI's options of the same names: ``rollouts`` (``--rollouts``,
    same-seed rollouts), ``seedless`` (``--seedless``: the env has no randomness) and
    ``budget`` (``--budget``: seconds, a ``timedelta`` or a string such as ``"2m"``; the plan
    is measured and cut to fit, docs/check.md, and ``report.data["params"]["budget"]`` says
    what was cut). ``policy`` (the adapter's ``--policy``) chooses a single-agent env's actions
    where a random sample means nothing (text): ``policy(observation, rng)``, ``rng`` a numpy
    ``Generator`` seeded from the reset's seed; a ``"module:function"`` string or a
    module-level function (the fresh-process checks import it by name). ``ignore``
    (``--ignore``) names fields every check leaves out, as JSON Pointers into a step such as
    ``"/obs/elapsed_time"`` or ``"/obs/chat_messages/*/timestamp"`` (docs/replay.md, "Fields
    meant to vary"); report.json keeps them in ``params.ignore``. ``timings`` (``--timings``)
    records the wall time of the reset and each step of the runs every check compared, in
    ``checks[].step_ms``: off by default, as times differ from run to run.
    """
    contract_file = None
    if isinstance(contract, (str, os.PathLike)):
        contract_file, contract = os.fspath(contract), None
    source = _resolve(env, contract, policy)
    if isinstance(ignore, str):
        raise ConfigError(f"ignore takes a list of JSON Pointers, not one string: ignore=[{ignore!r}]")
    ignore = [str(p) for p in ignore]
    wanted = list(CHECKS if checks is None else checks)
    for name in wanted:
        if name not in CHECKS + OPTIONAL_CHECKS:
            raise ConfigError(f"unknown check {name!r}; known: {', '.join(CHECKS + OPTIONAL_CHECKS)}")
    skipped = {}
    if "process" in wanted and source.argv is None:
        skipped["process"] = source.skip_reason
        wanted.remove("process")
    seeds = [_count("a seed", s, 0) for s in seeds]
    if not seeds:
        raise ConfigError("seeds names no seed: give at least one (range(5) checks seeds 0..4)")
    steps = _count("steps per rollout", steps, 1, " (0 would check nothing past the reset)")
    if rollouts is not None:
        rollouts = _count("rollouts of the same-seed check", rollouts, 2, " (it compares them)")
    native = _native.check(
        source.make,
        source.env_id,
        seeds,
        steps,
        wanted,
        source.argv,
        source.child_env,
        rollouts=rollouts,
        seedless=bool(seedless),
        budget=_budget_seconds(budget),
        ignore=ignore,
        timings=bool(timings),
        contract_file=contract_file,
    )
    return Report(native, skipped, _replay_for(env, source, steps, contract_file or contract, ignore))


def _budget_seconds(budget):
    if budget is None:
        return None
    if isinstance(budget, str):
        return _native.parse_duration(budget)
    seconds = budget.total_seconds() if hasattr(budget, "total_seconds") else budget
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ConfigError(f"budget must be a duration such as 90, timedelta(minutes=2) or '2m', more than zero; got {budget!r}")
    return float(seconds)


def assert_reproducible(env, seeds: Iterable[int] = range(3), steps: int = 100, checks=None, contract=None) -> Report:
    """:func:`check` for pytest: raises ``AssertionError`` with the terminal explanation
    (``str(report)``: the failures grouped across seeds, each with its first divergence and the
    call that replays it) when any check fails; returns the report otherwise."""
    report = check(env, seeds=seeds, steps=steps, checks=checks, contract=contract)
    if not report.passed:
        raise AssertionError(f"{report.data['params']['envs'][0]} is not reproducible:\n{report}")
    return report


def trace(env, seed: int = 0, steps: int = 100) -> str:
    """The episode digest (hex) of one rollout with lockstep's seeded actions: what
    ``lockstep trace --env NAME --seed S --steps N`` prints for the same env."""
    seed = _count("a seed", seed, 0)
    steps = _count("steps per rollout", steps, 1, " (0 would check nothing past the reset)")
    source = _resolve(env)
    return _native.trace(source.make, source.env_id, seed, steps)


from . import contract, golden  # noqa: E402 - they import the names above


def __getattr__(name):
    # `lockstep.range` imports numpy and gymnasium (a tenth of a second): only when used, so
    # `python -m lockstep`, which every worker process of a check runs, starts without them.
    if name == "range":
        import importlib

        return importlib.import_module(".range", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CHECKS",
    "Failure",
    "Report",
    "assert_reproducible",
    "check",
    "contract",
    "golden",
    "range",
    "trace",
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

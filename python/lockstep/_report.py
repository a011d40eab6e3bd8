"""``Report`` and ``Failure``: the result of :func:`lockstep.check`, in the CLI's words.

The text is the CLI's own: ``str(report)`` and ``str(failure)`` are rendered by the renderer
``lockstep check`` prints with (crates/cli/src/render.rs, called through the native module),
so the table, the grouping across seeds and the causes read the same in a terminal and in a
failed pytest assertion. The fields of a :class:`Failure` are report.json's, in its vocabulary
(``left``/``right`` for the two sides of a divergence, docs/report.md).
"""

from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

from ._diff import MISSING, Change

# The CLI's pointers to its own verbose view, and what gives that view here.
_VERBOSE_HINTS = (("`lockstep check -v`", "`report.summary(verbose=True)`"), ("`check -v`", "`report.summary(verbose=True)`"))
_RESET_LABELS = ("a fresh instance", "after an episode and reset(seed)")


@dataclass(frozen=True)
class Failure:
    """One failure of one trial (an env and a seed), as report.json records it.

    ``check``: the failing check's name as in report.json (``"same"``, ``"interleaved"``, ...),
    ``"reset contract"`` or ``"error"``. ``summary``: its one line. Where the check found the
    first divergence: ``step`` (0 is the reset), ``site`` (report.json's ``site.kind``:
    ``"obs"``, ``"reward"``, ``"info"``, ...), ``agent``, ``key`` (the observation key, or the
    info's JSON Pointer), ``element`` (the array element's row-major index, or the log line),
    ``left`` and ``right`` (both values, as report.json writes them: array elements and rewards
    as text) with what each side is (``left_label``, ``right_label``). For the reset contract,
    ``key`` is the first changed field's JSON Pointer, ``left``/``right`` its value on a fresh
    instance and after an episode and ``reset(seed)`` (:data:`lockstep.MISSING` for an absent
    side), and ``changes`` every change. ``None`` where a failure has no such part.

    ``replay``: the Python call that re-runs it (docs/python.md). ``divergence``: report.json's
    whole record. ``str(failure)`` (and ``text``): what ``lockstep check`` prints for this
    trial.
    """

    env: str
    seed: int
    check: str
    summary: str
    step: Optional[int] = None
    site: Optional[str] = None
    agent: Optional[str] = None
    key: Optional[str] = None
    element: Optional[int] = None
    left: Any = None
    right: Any = None
    left_label: Optional[str] = None
    right_label: Optional[str] = None
    changes: Tuple[Change, ...] = ()
    replay: Optional[str] = None
    divergence: Optional[dict] = field(default=None, repr=False, compare=False)
    text: str = field(default="", repr=False, compare=False)

    def __str__(self):
        return self.text


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _divergence_fields(d):
    """step, site, agent, key, element, left, right of report.json's divergence record."""
    site = d.get("site") or {}
    detail = d.get("detail") or {}
    out = {"step": d.get("step"), "site": site.get("kind"), "agent": site.get("agent"), "key": site.get("key")}
    kind = detail.get("kind")
    if kind == "element":
        out.update(element=detail.get("index"), left=detail.get("left"), right=detail.get("right"))
    elif kind == "info" and detail.get("changes"):
        first = detail["changes"][0]
        out.update(key=first.get("pointer"), left=first.get("left", MISSING), right=first.get("right", MISSING))
    elif kind == "log":
        out.update(element=detail.get("line"), left=detail.get("left"), right=detail.get("right"))
    elif kind == "layout":
        out.update(
            left=f"{detail.get('left_dtype')} {tuple(detail.get('left_shape') or ())}",
            right=f"{detail.get('right_dtype')} {tuple(detail.get('right_shape') or ())}",
        )
    elif "left" in site:
        out.update(left=_frozen(site["left"]), right=_frozen(site["right"]))
    elif "left_steps" in site:
        out.update(left=site["left_steps"], right=site["right_steps"])
    return out


def _first_line(text, seed):
    """What the CLI says of the trial: the line after ``seed S: ``."""
    mark = f"  seed {seed}: "
    for line in text.splitlines():
        if line.startswith(mark):
            return line[len(mark) :].rstrip(":")
    return ""


def _failure(trial, what, text, replay):
    base = {"env": trial["env"], "seed": trial["seed"], "check": what, "replay": replay, "text": text}
    if what == "error":
        cause = _first_line(text, trial["seed"]).removeprefix("error: ").removesuffix(", raised in your code")
        return Failure(summary=cause, **base)
    if what == "reset contract":
        audit = trial["audit"]
        changes = tuple(
            Change(c.get("pointer", ""), c.get("kind", "changed"), c.get("before", MISSING), c.get("after", MISSING))
            for c in audit["changes"]
        )
        fields = {}
        if changes:
            fields = {"key": changes[0].pointer, "left": changes[0].before, "right": changes[0].after}
        elif audit["missing"] or audit["unexpected"]:
            fields = {"key": (audit["missing"] + audit["unexpected"])[0]}
        return Failure(
            summary=_first_line(text, trial["seed"]),
            left_label=_RESET_LABELS[0],
            right_label=_RESET_LABELS[1],
            changes=changes,
            **fields,
            **base,
        )
    outcome = next(c for c in trial["checks"] if c["check"] == what)
    d = outcome.get("divergence")
    timeline = outcome.get("timeline") or {}
    return Failure(
        summary=outcome["summary"],
        left_label=timeline.get("left_label"),
        right_label=timeline.get("right_label"),
        divergence=d,
        **(_divergence_fields(d) if d else {}),
        **base,
    )


def replay_call(env_expr: str, steps: int, contract: Optional[dict], note: str = "", policy: Optional[str] = None, ignore=()) -> Callable:
    """``replay(env, seed, checks)``: the ``lockstep.check`` call re-running one trial's
    failed checks (with no check named, every check of that seed, as the CLI's replay of a
    reset-contract failure)."""

    def replay(_env, seed, checks):
        args = [env_expr, f"seeds=[{seed}]", f"steps={steps}"]
        if checks:
            args.append(f"checks={list(checks)!r}")
        if contract:
            args.append(f"contract={contract!r}")
        if policy:
            args.append(f"policy={policy!r}")
        if ignore:
            args.append(f"ignore={list(ignore)!r}")
        return f"lockstep.check({', '.join(args)})" + note

    return replay


def _words(text):
    """The CLI's text with its pointers to ``check -v`` pointing at this package's view."""
    for cli, here in _VERBOSE_HINTS:
        text = text.replace(cli, here)
    return text


def _header(data):
    """The line ``lockstep check`` starts with (on stderr): what determined the run."""
    p = data["params"]
    seeds = p["seeds"]
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    seeds_text = f"{seeds[0]}..{seeds[-1] + 1}" if contiguous else ",".join(map(str, seeds))
    ignore = f" ignore {','.join(p['ignore'])}" if p.get("ignore") else ""
    return (
        f"lockstep {data['lockstep_version']} check: envs {','.join(p['envs'])} seeds {seeds_text} "
        f"steps {p['steps']} checks {','.join(p['checks'])}{ignore}"
    )


def _summary(native, data, skipped, replay, verbose):
    """The CLI's header line and text of ``native`` (crates/cli's renderer), the checks
    skipped here listed before its verdict."""
    text = _words(native.render_text(verbose, replay)).rstrip("\n")
    body, _, verdict = text.rpartition("\n\n")
    for name, why in skipped.items():
        body += f"\n\nSKIPPED {name} check: {why}"
    if native.passed and skipped:
        verdict += " (some skipped)"
    return f"{_header(data)}\n{body}\n\n{verdict}"


def replay_for(env, source, steps: int, contract: Optional[dict], ignore=()) -> Callable:
    """:func:`replay_call` of ``env`` as :func:`lockstep.check` was given it (``source`` its
    resolved form): a string, or the name a fresh interpreter imports a callable by; a callable
    without one by its own name in the caller's code, a lambda by a placeholder said as one."""
    policy = source.policy[0] if source.policy else None
    if isinstance(env, str) or source.argv is not None:
        return replay_call(repr(source.env_id), steps, contract, policy=policy, ignore=ignore)
    name = source.env_id.rpartition("<locals>.")[2]
    if all(part.isidentifier() for part in name.split(".")):
        return replay_call(name, steps, contract, policy=policy, ignore=ignore)
    return replay_call("make_env", steps, contract, f"  # make_env: the {name} given to lockstep.check", policy, ignore)


class Report(str):
    """The report of one :func:`lockstep.check` run.

    ``passed``: conformity held and every check that ran passed, with no environment error.
    ``failures``: one :class:`Failure` per failing check of each trial, in the order of the
    grouped text. ``skipped``: checks that could not run here, by name, with the reason (never
    counted as passed). ``to_json()`` / ``write(dir)``: the CLI's report.json (and
    report.html).

    A report is also its text (a ``str``): what ``lockstep check`` prints (its header line,
    the table, the failures grouped across seeds, the skipped checks, the verdict). So ``print(report)``
    shows it, and so does ``assert report.passed, report`` in pytest, which prints a message
    that is a ``str`` in full but any other object by its ``repr()`` cut to 240 characters.
    ``repr(report)`` is short; ``bool(report)`` is ``passed``.
    """

    def __new__(cls, native, skipped, replay=None):
        data = native.to_dict()
        self = super().__new__(cls, _summary(native, data, dict(skipped), replay, False))
        self._native = native
        self._replay = replay
        self.skipped = dict(skipped)
        self.data = data
        self._failures = None
        return self

    @property
    def passed(self) -> bool:
        return self._native.passed

    @property
    def trials(self):
        """The trials of report.json: one dict per (env, seed)."""
        return self.data["trials"]

    @property
    def failures(self) -> List[Failure]:
        """One :class:`Failure` per failing check of each trial: per env the environment
        errors, then the reset contract, then the checks in report order, each by seed."""
        if self._failures is None:
            trials = {(t["env"], t["seed"]): t for t in self.data["trials"]}
            self._failures = [
                _failure(trials[(env, seed)], what, _words(text).lstrip("\n"), replay)
                for what, env, seed, text, replay in self._native.failures(self._replay)
            ]
        return list(self._failures)

    def summary(self, verbose: bool = False) -> str:
        """What ``lockstep check`` prints for this report (``check -v`` with ``verbose``: every
        trial, one block per failing one), with the checks skipped here before the verdict;
        without ``verbose``, ``str(report)``."""
        if not verbose:
            return str(self)
        return _summary(self._native, self.data, self.skipped, self._replay, verbose)

    def __bool__(self):
        return self.passed

    def __reduce__(self):
        raise TypeError("a lockstep.Report is not picklable: keep report.to_json(), its report.json")

    def __repr__(self):
        skipped = f" skipped={sorted(self.skipped)}" if self.skipped else ""
        return f"<lockstep.Report passed={self.passed} trials={len(self.trials)} failures={len(self.failures)}{skipped}>"

    def to_json(self) -> str:
        """The bytes of the CLI's report.json (format lockstep-report/3, docs/report.md)."""
        return self._native.to_json()

    def write(self, dir) -> None:
        """Writes report.json and report.html (its replay commands the Python calls of
        :attr:`Failure.replay`) into ``dir`` (created if needed)."""
        self._native.write(str(dir), self._replay)

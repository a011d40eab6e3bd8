"""Field-level differences between two JSON values, as the CLI's ``lockstep diff``."""

from dataclasses import dataclass, field
from typing import Any, List

from . import _native


class _Missing:
    """The side of a change where the path does not exist."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "lockstep.MISSING"

    def __bool__(self):
        return False


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Change:
    """One differing path. ``kind`` is ``"added"`` (only in ``b``; ``before`` is
    :data:`MISSING`), ``"removed"`` (only in ``a``; ``after`` is :data:`MISSING`) or
    ``"changed"`` (in both, different canonical bytes)."""

    pointer: str
    kind: str
    before: Any = MISSING
    after: Any = MISSING

    def __str__(self):
        at = self.pointer or "(root)"
        sides = [v for v in (self.before, self.after) if v is not MISSING]
        return f"{self.kind} {at}: " + " -> ".join(_render(v) for v in sides)


@dataclass(frozen=True)
class Diff:
    """All differences of ``a -> b``: ``different_fields`` (top-level keys that differ, ``""``
    when the roots are not both objects) and ``changes`` (every differing leaf, depth first,
    keys in byte order). Falsy when the values are equal."""

    different_fields: List[str] = field(default_factory=list)
    changes: List[Change] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.changes

    def __bool__(self):
        return bool(self.changes)

    def __str__(self):
        if not self.changes:
            return "no differences"
        fields = ", ".join(f or "(root)" for f in self.different_fields)
        return "\n".join([f"different fields: {fields}"] + [str(c) for c in self.changes])


def _render(value):
    return _native.canonical(value, "python").decode("ascii")


def diff(a, b) -> Diff:
    raw = _native.diff(a, b)
    changes = [
        Change(c["pointer"], c["kind"], c.get("before", MISSING), c.get("after", MISSING)) for c in raw["changes"]
    ]
    return Diff(list(raw["different_fields"]), changes)

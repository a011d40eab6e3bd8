"""An env's attributes as its starting state: the default reset contract of a Python env.

A user's env rarely ships a contract, and the partial reset that breaks "fixed seed, same
episode" most often is an attribute ``reset`` forgets (``self.visited``, a spawn timer, a
cache). So unless a contract names its fields, the state lockstep fingerprints is every
attribute of ``env.unwrapped`` (its ``__dict__`` and ``__slots__``), each read by
:func:`attribute_state`; the audit then holds the env to the attributes its first reset left
(an inferred contract, said so in the report).

What has no inspectable state (a C extension object: a pygame ``Surface``, a Box2D world) is
kept in place as the marker ``"<skipped module.Type>"``, the same on every read, and its JSON
Pointer is listed under the state's own field :data:`SKIPPED_FIELD`, so the report names what
lockstep could not see instead of pretending it compared it.
"""

import base64
import collections.abc
import json
import logging
import random

import numpy as np

from .wire import rng_state, to_json

#: How deep :func:`attribute_state` follows objects inside objects.
DEPTH_MAX = 12

#: The field of an inferred state listing the pointers of what could not be read.
SKIPPED_FIELD = "lockstep_skipped"

#: How many values one attribute may hold before it is skipped whole ("more than N values"):
#: an object graph whose objects link to each other (a grid of cells knowing their neighbours)
#: is read once per path to each object, and would otherwise take seconds at every reset. The
#: count does not depend on the order of reading, so the cut is the same in every process.
NODES_MAX = 200_000


class _TooBig(BaseException):
    """Raised through every level of a read when an attribute exceeds :data:`NODES_MAX`."""


#: The marker of a set: ``{"$set": [members in canonical order]}``; lockstep's diff reads it
#: and reports members added and removed rather than positions.
SET_KEY = "$set"


def _qualified(klass):
    name = getattr(klass, "__qualname__", klass.__name__)
    module = getattr(klass, "__module__", None)
    return name if module in (None, "builtins") else f"{module}.{name}"


def _segment(key):
    return str(key).replace("~", "~0").replace("/", "~1")


def _canonical_text(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _plain_key(k):
    if k is None or isinstance(k, (str, bool, int, float, np.integer, np.floating)):
        return True
    return isinstance(k, tuple) and all(_plain_key(x) for x in k)


def _own_attributes(value):
    """An object's instance attributes (slots, then ``__dict__``), read without running a
    property; ``None`` when it has none to read."""
    attrs = {}
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                try:
                    attrs[slot] = object.__getattribute__(value, slot)
                except AttributeError:
                    pass
    try:
        attrs.update(vars(value))
    except TypeError:
        pass
    return attrs


def exclusion_patterns(names):
    """``--exclude`` entries as pointer patterns: ``frame`` is ``/frame``; ``/world/agents/*/action``
    leaves out every agent's ``action`` (``*`` is any one segment)."""
    patterns = []
    for name in names:
        name = name.strip()
        if name:
            patterns.append(tuple(name.lstrip("/").split("/")))
    return tuple(patterns)


def _matching(path, patterns):
    segments = path.lstrip("/").split("/")
    for p in patterns:
        if len(p) == len(segments) and all(a == "*" or a == b for a, b in zip(p, segments)):
            return p
    return None


def _matches(path, patterns):
    return _matching(path, patterns) is not None


class _Reader:
    """One read of a state: the pointers skipped so far and the objects on the current path
    (a cycle is ``"<cycle>"``)."""

    def __init__(self, root=None, exclude=()):
        self.exclude = exclusion_patterns(exclude)
        # The patterns that left something out: one that never does is named by the caller
        # (a typo, or `np_random` for Gymnasium's `_np_random`).
        self.used = set()
        # Pointer to the reasons it was skipped: members of one set share a pointer, and a
        # set's members are read in an order that may vary, so every reason is kept.
        self.skipped = {}
        self.nodes = 0
        # The env itself is on every path: an object pointing back at it is a cycle.
        self._active = set() if root is None else {id(root)}

    def skip(self, path, why):
        self.skipped.setdefault(path or "/", set()).add(why)
        return f"<skipped {why}>"

    def excluded(self, path):
        if not self.exclude:
            return False
        p = _matching(path, self.exclude)
        if p is not None:
            self.used.add(p)
        return p is not None

    def read_attribute(self, value, path):
        """One top-level value, skipped whole when it holds more than :data:`NODES_MAX`."""
        self.nodes = 0
        try:
            return self.read(value, path)
        except _TooBig:
            self.skipped = {k: v for k, v in self.skipped.items() if not (k == path or k.startswith(path + "/"))}
            return self.skip(path, f"more than {NODES_MAX} values")

    def read(self, value, path, depth=0):
        self.nodes += 1
        if self.nodes > NODES_MAX:
            raise _TooBig
        if value is None or value is True or value is False or isinstance(value, str):
            return value
        try:
            return self._value(value, path, depth)
        except Exception as exc:  # noqa: BLE001 - an object that breaks when read is skipped, named
            return self.skip(path, f"{_qualified(type(value))}: reading it raised {type(exc).__name__}")

    def _value(self, value, path, depth):
        if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating, bytes, bytearray)):
            return to_json(value)
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return self.read(value.tolist(), path, depth + 1)
            return {
                "dtype": value.dtype.str,
                "shape": [int(n) for n in value.shape],
                "bytes": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii"),
            }
        if isinstance(value, np.generic):
            return to_json(value.item())
        if isinstance(value, np.dtype):
            return f"<dtype {value.str}>"
        if isinstance(value, (np.random.Generator, np.random.RandomState, np.random.BitGenerator)):
            return rng_state(value)
        if isinstance(value, random.Random):
            return {"random.Random": to_json(value.getstate())}
        if isinstance(value, (logging.Logger, logging.LoggerAdapter)):
            # A logger is configuration shared by the whole process (its cache fills as it
            # logs), not the env's state: its name stands for it.
            return f"<logger {getattr(value, 'name', '?')}>"
        if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
            return f"<{getattr(value, '__module__', '?')}.{value.__qualname__}>"
        if type(value).__name__ == "module":
            return f"<module {value.__name__}>"
        if type(value).__module__.startswith("playwright."):
            # A handle to a browser (a Page, a BrowserContext): its internals count requests
            # and hold greenlets; what it points at is read as a browser layer (layers.py).
            # A handle per page still shows how many there are (BrowserGym's page_history).
            return f"<playwright {type(value).__name__}>"
        if depth >= DEPTH_MAX:
            return self.skip(path, f"nested deeper than {DEPTH_MAX}")
        if id(value) in self._active:
            return "<cycle>"
        self._active.add(id(value))
        try:
            return self._container(value, path, depth)
        finally:
            self._active.discard(id(value))

    def _container(self, value, path, depth):
        if isinstance(value, collections.abc.Mapping):
            if not all(_plain_key(k) for k in value.keys()):
                # Objects as keys: their text would be an address. The pairs, read as values,
                # are the mapping's state, compared as a set.
                pairs = [
                    [self.read(k, f"{path}/{SET_KEY}", depth + 1), self.read(v, f"{path}/{SET_KEY}", depth + 1)]
                    for k, v in value.items()
                ]
                return {SET_KEY: sorted(pairs, key=_canonical_text)}
            out = {}
            for k, v in value.items():
                key = k if isinstance(k, str) else _canonical_text(to_json(k))
                # A key of the user's own that looks like the set marker gets one more `$`.
                key = "$" + key if key.startswith(SET_KEY) else key
                if key in out:
                    return self.skip(path, f"dict keys {key!r} collide as text")
                child = f"{path}/{_segment(key)}"
                if not self.excluded(child):
                    out[key] = self.read(v, child, depth + 1)
            return out
        if isinstance(value, (list, tuple, collections.abc.Sequence)) and not isinstance(value, (str, bytes, bytearray)):
            return [
                self.read(v, f"{path}/{i}", depth + 1)
                for i, v in enumerate(value)
                if not self.excluded(f"{path}/{i}")
            ]
        if isinstance(value, collections.abc.Set):
            members = [self.read(v, f"{path}/{SET_KEY}", depth + 1) for v in value]
            return {SET_KEY: sorted(members, key=_canonical_text)}
        getstate = getattr(type(value), "__getstate__", None)
        if (
            getstate is not None
            and getstate is not getattr(object, "__getstate__", None)
            # gymnasium's EzPickle gives the constructor's arguments, not the state.
            and getattr(getstate, "__qualname__", "") != "EzPickle.__getstate__"
        ):
            # The class says what its state is (pymunk's bodies keep theirs in C, and give it
            # here): that, not its handles.
            return {"__class__": _qualified(type(value)), "__getstate__": self.read(getstate(value), f"{path}/__getstate__", depth + 1)}
        attrs = _own_attributes(value)
        if not attrs:
            return self._reduced(value, path, depth)
        out = {"__class__": _qualified(type(value))}
        for k in sorted(attrs, key=str):
            child = f"{path}/{_segment(k)}"
            if not self.excluded(child):
                out[str(k)] = self.read(attrs[k], child, depth + 1)
        return out

    def _reduced(self, value, path, depth):
        """A C extension object by what it pickles to (a pygame ``Rect`` is its x, y, width and
        height); skipped when it does not pickle, or pickles to nothing but its class."""
        try:
            reduced = value.__reduce_ex__(4)
        except Exception:  # noqa: BLE001 - "cannot pickle": no state to read
            reduced = None
        if isinstance(reduced, tuple) and len(reduced) >= 2 and isinstance(reduced[1], tuple):
            args = [a for a in reduced[1] if a is not type(value)]
            extra = reduced[2] if len(reduced) > 2 else None
            if args or extra is not None:
                out = {"__class__": _qualified(type(value)), "__reduce__": self.read(args, f"{path}/__reduce__", depth + 1)}
                if extra is not None:
                    out["__state__"] = self.read(extra, f"{path}/__state__", depth + 1)
                return out
        return self.skip(path, _qualified(type(value)))


def attribute_state(value, skipped=None, path=""):
    """Plain JSON of one attribute's value, for a fingerprint.

    Numbers, strings, ``None`` and containers as themselves (dict keys that are not strings as
    their JSON text, tuples as lists); sets as ``{"$set": members}`` sorted by canonical JSON,
    so ``PYTHONHASHSEED`` does not move them; numpy arrays as ``{"dtype", "shape", "bytes"}``
    (base64 of the raw bytes: every bit counts) and numpy scalars as numbers; RNGs (numpy's
    and ``random.Random``) by their state; classes, functions and modules by qualified name;
    a mapping with objects as keys as the set of its ``[key, value]`` pairs; other objects by
    what their class's own ``__getstate__`` returns, else by their attributes, ``{"__class__":
    "module.Name", attr: ...}``, or, with none (a C extension object), by what they pickle to
    (``"__reduce__"``). A cycle is
    ``"<cycle>"``. What cannot be read (no attributes, nesting past :data:`DEPTH_MAX`, an
    error while reading) is ``"<skipped why>"``, and ``skipped`` (a dict) gets its pointer.
    """
    reader = _Reader()
    out = reader.read_attribute(value, path)
    if skipped is not None:
        skipped.update(_reasons(reader.skipped))
    return out


def _reasons(skipped):
    """Pointer to its reasons as one text, the same whatever order they were met in."""
    return {pointer: " | ".join(sorted(whys)) for pointer, whys in skipped.items()}


def skipped_summary(skipped):
    """``skipped`` (pointer to reason) with one entry per reason: its first pointer, and how
    many values had it. A Box2D world has thousands of opaque handles of one kind; the report
    names the kind once."""
    by_reason = {}
    for pointer in sorted(skipped):
        first, count = by_reason.get(skipped[pointer], (pointer, 0))
        by_reason[skipped[pointer]] = (first, count + 1)
    return dict(
        sorted((first, reason if count == 1 else f"{reason}, {count} values like it") for reason, (first, count) in by_reason.items())
    )


def _is_lockstep_hook(name):
    name = str(name)
    return name.startswith("lockstep_") or name.startswith("__")


#: Attributes a library reads with ``getattr(env, name, default)``, so that absent and the
#: default are one state: read as the default when absent, rather than reported as a field
#: the first episode added. PettingZoo's AECEnv creates ``_skip_agent_selection`` at the first
#: dead agent's step and sets it back to ``None``; every turn-based env (and every parallel env
#: built from one) would otherwise fail conformity on it.
ABSENT_MEANS = {"_skip_agent_selection": None}


def _library_defaults(env):
    if not hasattr(type(env), "_was_dead_step"):  # PettingZoo's AECEnv
        return {}
    return ABSENT_MEANS


def inferred_state(env, exclude=(), unused=None):
    """Every attribute of ``env`` (an unwrapped env) by :func:`attribute_state`, except what
    ``exclude`` names (:func:`exclusion_patterns`) and lockstep's own hooks (``lockstep_*``);
    what could not be read is listed, pointer to reason, under :data:`SKIPPED_FIELD`. The
    exclusions that left nothing out are appended to ``unused`` (a list), as written."""
    reader = _Reader(root=env, exclude=exclude)
    out = {}
    attrs = dict(_library_defaults(env))
    attrs.update(_own_attributes(env))
    for name, value in sorted(attrs.items(), key=lambda kv: str(kv[0])):
        name = str(name)
        path = "/" + _segment(name)
        if _is_lockstep_hook(name) or reader.excluded(path):
            continue
        out[name] = reader.read_attribute(value, path)
    out[SKIPPED_FIELD] = skipped_summary(_reasons(reader.skipped))
    if unused is not None:
        unused.extend("/" + "/".join(p) for p in reader.exclude if p not in reader.used)
    return out


def named_state(env, names, skipped, exclude=()):
    """The attributes ``names`` of ``env`` read as :func:`inferred_state` reads them (a
    missing attribute is ``None``)."""
    reader = _Reader(root=env, exclude=exclude)
    out = {name: reader.read_attribute(getattr(env, name, None), "/" + _segment(name)) for name in names}
    skipped.update(_reasons(reader.skipped))
    return out

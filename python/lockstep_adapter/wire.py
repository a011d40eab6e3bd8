"""Encoding of the lockstep/1 wire format: arrays, spaces, JSON conversion.

Arrays travel as ``{"dtype": NUMPY_NAME, "shape": [...], "data": BASE64}`` where ``data`` is the
raw little-endian bytes of the elements in row-major order, so no float is ever re-formatted.
Only seven dtypes travel (``bool int8 uint8 int32 int64 float32 float64``); others are widened
without loss (``int16 uint16 -> int32``, ``uint32 -> int64``, ``float16 -> float32``) and
``uint64`` becomes ``int64`` when every element fits, otherwise it is an error.
"""

import base64
import json
import math
import struct

import numpy as np

from . import PROTOCOL, PROTOCOL_V2  # noqa: F401 - re-exported for the server

WIRE_DTYPES = ("bool", "int8", "uint8", "int32", "int64", "float32", "float64")

_WIDEN = {
    "int16": "int32",
    "uint16": "int32",
    "uint32": "int64",
    "float16": "float32",
}

_b64 = base64.b64encode
_isfinite = math.isfinite
_repr = float.__repr__


class WireError(Exception):
    """Something the adapter cannot put on the wire (an unsupported dtype, space or value)."""


def wire_array(value):
    """``value`` as a contiguous little-endian ndarray of a wire dtype."""
    arr = np.asarray(value)
    name = arr.dtype.name
    if name not in WIRE_DTYPES:
        if name in _WIDEN:
            arr = arr.astype(_WIDEN[name])
        elif name == "uint64":
            if arr.size and int(arr.max()) > np.iinfo(np.int64).max:
                raise WireError("uint64 array holds values above the int64 range")
            arr = arr.astype(np.int64)
        else:
            raise WireError(f"arrays of dtype {name} cannot travel (supported: {', '.join(WIRE_DTYPES)})")
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr)


class ArrayEncoder:
    """Encodes arrays to the wire JSON text, caching the header for the last dtype and shape.

    One encoder per observation key: the dtype and shape almost never change between steps, so
    the per-step cost is ``tobytes`` + ``b64encode`` + two string joins.
    """

    __slots__ = ("_dtype", "_shape", "_head")

    def __init__(self):
        self._dtype = None
        self._shape = None
        self._head = None

    def encode(self, value):
        arr = value
        if (
            type(arr) is not np.ndarray
            or arr.dtype is not self._dtype
            or arr.shape != self._shape
            or not arr.flags.c_contiguous
        ):
            arr = wire_array(value)
            if arr.dtype is not self._dtype or arr.shape != self._shape:
                self._dtype = arr.dtype
                self._shape = arr.shape
                self._head = '{"dtype":"%s","shape":%s,"data":"' % (
                    arr.dtype.name,
                    json.dumps(list(arr.shape)),
                )
        return self._head + _b64(arr.tobytes()).decode("ascii") + '"}'


def encode_array(value):
    """The wire JSON object (as a dict) of one array."""
    arr = wire_array(value)
    return {
        "dtype": arr.dtype.name,
        "shape": list(arr.shape),
        "data": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def decode_array(obj):
    """The ndarray of a wire JSON array object."""
    try:
        dtype = obj["dtype"]
        shape = [int(n) for n in obj["shape"]]
        data = base64.b64decode(obj["data"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed array object: {exc}") from None
    if dtype not in WIRE_DTYPES:
        raise WireError(f"unknown array dtype {dtype!r}")
    dt = np.dtype(dtype).newbyteorder("<")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(data) != count * dt.itemsize:
        raise WireError(f"array data holds {len(data)} bytes, shape {shape} of {dtype} needs {count * dt.itemsize}")
    return np.frombuffer(data, dtype=dt).reshape(shape).astype(np.dtype(dtype), copy=False)


def float_json(x):
    """A finite float as JSON text (Python's repr round-trips every double exactly)."""
    return repr(x)


def reward_fields(reward):
    """The reward's JSON fields as text: ``"reward":R`` for finite rewards, else ``reward_bits``.

    JSON has no NaN or infinity, so a non-finite reward travels as its IEEE-754 bits (16 hex
    digits, most significant first), which also keeps a NaN payload.
    """
    r = float(reward)
    if _isfinite(r):
        return '"reward":' + _repr(r)
    bits = struct.unpack("<Q", struct.pack("<d", r))[0]
    return '"reward":null,"reward_bits":"%016x"' % bits


def _float_value(x):
    if math.isfinite(x):
        return x
    # JSON has no NaN or infinity: they travel as these strings, documented in docs/protocol.md.
    return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")


def to_json(value):
    """Plain-JSON form of an info, a state or kwargs.

    numpy scalars become Python numbers, arrays nested lists (``tolist``), tuples lists, bytes
    base64 strings, sets lists in their iteration order (so an order that depends on
    ``PYTHONHASHSEED`` shows), non-finite floats the strings ``NaN``/``Infinity``/``-Infinity``,
    dict keys strings; any other object its ``repr``.
    """
    if value is None or value is True or value is False or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _float_value(float(value))
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return to_json(value.tolist())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, np.generic):
        return to_json(value.item())
    return repr(value)


def dumps(value):
    """Compact JSON text of an already plain value."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


# ---------------------------------------------------------------------------------------------
# Spaces


def _bound(x):
    x = float(x)
    if math.isfinite(x):
        return x
    return "Infinity" if x > 0 else ("-Infinity" if x < 0 else "NaN")


#: Gymnasium's space classes the adapter knows, by name; a subclass is its base's kind.
_GYMNASIUM_KINDS = ("Discrete", "MultiDiscrete", "MultiBinary", "Box", "Text", "Tuple", "Dict", "Sequence")

#: Spaces of other libraries the adapter knows by name, matched anywhere in a class's bases:
#: MiniGrid's ``MissionSpace`` (a string), BrowserGym's ``Unicode`` (a string: a plain
#: ``Space`` in browsergym-core 0.14, served as ``Text``), ``AnyDict`` and ``Anything`` (any
#: JSON) and ``AnyBox`` (an array of any shape).
_OTHER_KINDS = ("MissionSpace", "Unicode", "AnyDict", "Anything", "AnyBox")

#: Kinds of other libraries that are another kind here.
_SAME_AS = {"Unicode": "Text"}


def _space_kind(space):
    """The kind of ``space`` by its class and bases, as ``isinstance`` would say: BrowserGym's
    ``Unicode`` is ``Text``, BabyAI's subclass of ``MissionSpace`` is
    ``MissionSpace``; an unknown class is its own name."""
    for klass in type(space).__mro__:
        name = klass.__name__
        if name in _OTHER_KINDS:
            return _SAME_AS.get(name, name)
        if name in _GYMNASIUM_KINDS and klass.__module__.startswith("gymnasium.spaces"):
            return name
    return type(space).__name__


#: Spaces an element of a ``Sequence`` observation may have at a leaf: arrays that stack.
_STACKABLE = ("Discrete", "MultiDiscrete", "MultiBinary", "Box")

#: Spaces whose values travel as their canonical JSON: what has no array shape.
_JSON_KINDS = ("AnyDict", "Anything")

#: A Text longer than this (4 bytes a character) is declared with no length: BrowserGym's
#: ``Unicode`` allows 2**32 - 1 characters, too many bounds to list. Observation spaces are
#: informative (the arrays say their own shapes), and bounded Texts keep their declaration.
_TEXT_DECLARED_MAX = 1 << 16


def _all_stackable(space):
    """Whether every leaf of ``space`` (through Tuple and Dict) is an array that stacks."""
    kind = _space_kind(space)
    if kind == "Dict":
        return all(_all_stackable(sub) for sub in space.spaces.values())
    if kind == "Tuple":
        return all(_all_stackable(sub) for sub in space.spaces)
    return kind in _STACKABLE


class JsonLeaf:
    """One observation key whose value has no array form (BrowserGym's ``AnyDict``, a Sequence
    of chat messages): it travels as the UTF-8 bytes of its canonical JSON (:func:`dumps` of
    :func:`to_json`), a ``uint8`` array, so a difference shows in the trace and the report
    shows the text."""

    __slots__ = ("space",)

    def __init__(self, space):
        self.space = space


class SequenceLeaf:
    """One observation key inside a ``Sequence`` observation space.

    ``space`` is the leaf's own space, ``outer`` the path (dict keys, tuple indices) from the
    observation to the sequence, ``inner`` the path from one element to the leaf, and
    ``stack`` whether the env hands the elements over already stacked (``Sequence(...,
    stack=True)``). The key's array is the leaf of every element, stacked along a new first
    axis whose length is the sequence's: ``[n, *leaf_shape]``, ``[n]`` for a Discrete leaf,
    ``[0, *leaf_shape]`` for an empty sequence.
    """

    __slots__ = ("space", "outer", "inner", "stack")

    def __init__(self, space, outer, inner, stack):
        self.space = space
        self.outer = outer
        self.inner = inner
        self.stack = stack


def declare_space(space):
    """The lockstep ``Space`` JSON of one gymnasium space (Discrete, MultiDiscrete, MultiBinary,
    Box, and Tuple, Dict and Sequence of those), or of a :class:`SequenceLeaf`."""
    if isinstance(space, SequenceLeaf):
        return {"type": "sequence", "space": declare_space(space.space)}
    if isinstance(space, JsonLeaf):
        return {"type": "box", "dtype": "uint8", "shape": [0], "low": [], "high": []}
    kind = _space_kind(space)
    if kind == "Discrete":
        return {"type": "discrete", "n": int(space.n), "start": int(space.start)}
    if kind == "MultiDiscrete":
        return {"type": "multi_discrete", "nvec": [int(n) for n in np.asarray(space.nvec).ravel()]}
    if kind == "MultiBinary":
        n = int(np.prod(space.shape)) if space.shape else int(space.n)
        return {"type": "multi_discrete", "nvec": [2] * n}
    if kind == "Box":
        return {
            "type": "box",
            "dtype": wire_array(np.zeros((), dtype=space.dtype)).dtype.name,
            "shape": [int(n) for n in space.shape],
            "low": [_bound(x) for x in np.asarray(space.low, dtype=np.float64).ravel()],
            "high": [_bound(x) for x in np.asarray(space.high, dtype=np.float64).ravel()],
        }
    if kind == "AnyBox":
        # Any shape (a dimension of -1 is free): declared with the dtype, no bounds listed.
        shape = [max(int(n), 0) for n in (space.shape or ())]
        n = int(np.prod(shape)) if shape else 1
        dtype = wire_array(np.zeros((), dtype=space.dtype)).dtype.name
        return {"type": "box", "dtype": dtype, "shape": shape, "low": ["-Infinity"] * n, "high": ["Infinity"] * n}
    if kind in ("Text", "MissionSpace"):
        # A string observation travels as its UTF-8 bytes (at most 4 per character).
        n = 4 * int(getattr(space, "max_length", 0) or 0)
        if n > _TEXT_DECLARED_MAX:
            n = 0
        return {"type": "box", "dtype": "uint8", "shape": [n], "low": [0] * n, "high": [255] * n}
    if kind == "Tuple":
        return {"type": "tuple", "spaces": [declare_space(sub) for sub in space.spaces]}
    if kind == "Dict":
        return {"type": "dict", "spaces": {str(k): declare_space(sub) for k, sub in space.spaces.items()}}
    if kind == "Sequence":
        return {"type": "sequence", "space": declare_space(space.feature_space)}
    raise WireError(
        f"space {space!r} cannot be declared (supported: Discrete, MultiDiscrete, MultiBinary, Box, "
        "Tuple, Dict, Sequence; Text observations)"
    )


def observation_keys(space):
    """Observation key -> leaf space. Dict spaces give one key per entry (nested entries joined
    with ``/``), Tuple spaces one per index; any other space is the single key ``obs``. Inside
    a Sequence the same holds for its elements' space, and each leaf is a
    :class:`SequenceLeaf` (a Sequence of Text or of a Sequence cannot travel: an error)."""
    out = {}

    def walk(prefix, path, sp, seq):
        kind = _space_kind(sp)
        if seq is None and (kind in _JSON_KINDS or (kind == "Sequence" and not _all_stackable(sp.feature_space))):
            out[prefix or "obs"] = JsonLeaf(sp)
        elif kind == "Dict":
            for k, sub in sp.spaces.items():
                walk(f"{prefix}/{k}" if prefix else str(k), path + [k], sub, seq)
        elif kind == "Tuple":
            for i, sub in enumerate(sp.spaces):
                walk(f"{prefix}/{i}" if prefix else str(i), path + [i], sub, seq)
        elif kind == "Sequence":
            if seq is not None:
                raise WireError(f"a Sequence inside a Sequence cannot travel (at {prefix or 'obs'!r})")
            walk(prefix, [], sp.feature_space, (path, bool(getattr(sp, "stack", False))))
        elif seq is not None:
            if kind not in _STACKABLE:
                raise WireError(
                    f"a Sequence of {kind} cannot travel (at {prefix or 'obs'!r}; "
                    f"its elements must be {', '.join(_STACKABLE)}, or Tuple/Dict of those)"
                )
            out[prefix or "obs"] = SequenceLeaf(sp, seq[0], path, seq[1])
        else:
            out[prefix or "obs"] = sp

    walk("", [], space, None)
    return out


def _at(value, path):
    """The part of ``value`` at ``path`` (dict keys and tuple indices)."""
    for part in path:
        value = value[part]
    return value


def _stacked(leaf, sequence):
    """The array of one :class:`SequenceLeaf`: every element's leaf along a first axis."""
    kind = _space_kind(leaf.space)
    dtype = np.int64 if kind == "Discrete" else leaf.space.dtype
    if leaf.stack:
        arr = np.asarray(_at(sequence, leaf.inner), dtype=dtype)
        return arr.reshape(-1) if kind == "Discrete" else arr
    parts = [np.asarray(_at(element, leaf.inner), dtype=dtype) for element in sequence]
    if not parts:
        shape = () if kind == "Discrete" else tuple(leaf.space.shape)
        return np.zeros((0,) + shape, dtype=dtype)
    return np.stack(parts)


class ObservationEncoder:
    """Turns one agent's observation into the wire JSON text of its ``obs`` object."""

    def __init__(self, space):
        self.leaves = observation_keys(space)
        self.keys = sorted(self.leaves)
        self.names = {k: json.dumps(k) for k in self.keys}
        self.encoders = {k: ArrayEncoder() for k in self.keys}
        self.structured = _space_kind(space) in ("Dict", "Tuple") or any(
            isinstance(sp, SequenceLeaf) for sp in self.leaves.values()
        )
        self.discrete = {k for k, sp in self.leaves.items() if _space_kind(sp) == "Discrete"}
        self.text = {k for k, sp in self.leaves.items() if _space_kind(sp) in ("Text", "MissionSpace")}
        self.json = {k for k, sp in self.leaves.items() if isinstance(sp, JsonLeaf)}
        self.sequence = {k: sp for k, sp in self.leaves.items() if isinstance(sp, SequenceLeaf)}

    def _leaf(self, key, value):
        if key in self.discrete:
            return np.asarray([value], dtype=np.int64).reshape(1)
        if key in self.text:
            # The string's UTF-8 bytes, shape [n]: a changed mission shows in the trace.
            return np.frombuffer(str(value).encode("utf-8"), dtype=np.uint8)
        if key in self.json:
            text = json.dumps(to_json(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        return value

    def encode(self, obs):
        if not self.structured:
            return '{"obs":' + self.encoders["obs"].encode(self._leaf("obs", obs)) + "}"
        parts = []
        for key in self.keys:
            leaf = self.sequence.get(key)
            if leaf is not None:
                value = _stacked(leaf, _at(obs, leaf.outer))
            else:
                value = obs
                for part in key.split("/"):
                    value = value[part] if isinstance(value, dict) else value[int(part)]
                value = self._leaf(key, value)
            parts.append(self.names[key] + ":" + self.encoders[key].encode(value))
        return "{" + ",".join(parts) + "}"


class ActionDecoder:
    """Turns a wire action into what the env's ``step`` expects for one action space.

    A Tuple action arrives as a list of its parts and becomes a tuple, a Dict action as an
    object of its parts and becomes a dict (the space's own keys), a Sequence action as a list
    of elements and becomes a tuple (stacked into an array for ``Sequence(..., stack=True)``
    of a flat space); each part is decoded by its own space.
    """

    def __init__(self, space):
        self.space = space
        self.kind = _space_kind(space)
        if self.kind not in ("Discrete", "MultiDiscrete", "MultiBinary", "Box", "Tuple", "Dict", "Sequence"):
            raise WireError(f"action space {space!r} is not supported")
        if self.kind == "MultiDiscrete":
            self.start = np.asarray(getattr(space, "start", 0), dtype=np.int64)
        if self.kind == "Tuple":
            self.parts = [ActionDecoder(sub) for sub in space.spaces]
        if self.kind == "Dict":
            self.parts = {str(k): (k, ActionDecoder(sub)) for k, sub in space.spaces.items()}
        if self.kind == "Sequence":
            self.element = ActionDecoder(space.feature_space)
            self.stack = bool(getattr(space, "stack", False))
            if self.stack and self.element.kind not in _STACKABLE:
                raise WireError(f"a stacked Sequence of {self.element.kind} actions is not supported")

    def decode(self, action):
        if self.kind == "Discrete":
            if type(action) is not int:
                raise WireError(f"discrete action must be an integer, got {action!r}")
            return action
        if self.kind == "MultiDiscrete":
            arr = np.asarray(action, dtype=np.int64).reshape(self.space.shape) + self.start
            return arr.astype(self.space.dtype)
        if self.kind == "MultiBinary":
            return np.asarray(action, dtype=self.space.dtype).reshape(self.space.shape)
        if self.kind == "Tuple":
            if type(action) is not list or len(action) != len(self.parts):
                raise WireError(f"tuple action must be a list of {len(self.parts)} parts, got {action!r}")
            return tuple(part.decode(a) for part, a in zip(self.parts, action))
        if self.kind == "Dict":
            if type(action) is not dict or sorted(action) != sorted(self.parts):
                raise WireError(f"dict action must be an object with keys {sorted(self.parts)}, got {action!r}")
            return {key: part.decode(action[name]) for name, (key, part) in self.parts.items()}
        if self.kind == "Sequence":
            if type(action) is not list:
                raise WireError(f"sequence action must be a list, got {action!r}")
            elements = tuple(self.element.decode(a) for a in action)
            if not self.stack:
                return elements
            sub = self.space.feature_space
            dtype = np.int64 if self.element.kind == "Discrete" else sub.dtype
            if not elements:
                shape = () if self.element.kind == "Discrete" else tuple(sub.shape)
                return np.zeros((0,) + shape, dtype=dtype)
            return np.stack([np.asarray(e, dtype=dtype) for e in elements])
        arr = decode_array(action).reshape(self.space.shape)
        return arr.astype(self.space.dtype)


def rng_state(rng):
    """JSON of a numpy Generator / RandomState / BitGenerator state, or None."""
    if rng is None:
        return None
    if isinstance(rng, np.random.Generator):
        return to_json(rng.bit_generator.state)
    if isinstance(rng, np.random.RandomState):
        return to_json(rng.get_state(legacy=False))
    if isinstance(rng, np.random.BitGenerator):
        return to_json(rng.state)
    return repr(type(rng))

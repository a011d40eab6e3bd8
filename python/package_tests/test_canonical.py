import hashlib
import json
import math
import random
import struct
from collections import OrderedDict

import numpy as np
import pytest

import lockstep

SPECIAL_FLOATS = [
    0.0, -0.0, 1e16, -1e16, 9999999999999998.0, 1e-4, 9.999999999999999e-05, 5e-324, -5e-324,
    2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1 / 3, 1e22, 1e21, 123456789012345680.0,
    float("nan"), float("inf"), float("-inf"), 1.5, 100.0,
]
SPECIAL_INTS = [0, -1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**64 + 1, 10**40, -(10**100)]
ALPHABET = (
    [chr(c) for c in range(0x20)]
    + list("aZ09 \"\\/~'\x7f\x80")
    + ["\u00e9", "\u2028", "\u2029", "\ufeff", "\uffff", "\ue000", "\u4e2d", "\U0001f600", "\U00010000", "\U0010ffff"]
)


def hashlib_recipe(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def text(rng):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 8)))


def scalar(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(SPECIAL_FLOATS)
    if kind == 1:
        # Any bit pattern: subnormals, NaN payloads, huge and tiny exponents.
        return struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
    if kind == 2:
        return rng.choice(SPECIAL_INTS) + rng.randrange(-2, 3)
    if kind == 3:
        return rng.getrandbits(rng.randrange(1, 300)) * rng.choice([1, -1])
    if kind == 4:
        return text(rng)
    if kind == 5:
        return rng.choice([True, False, None])
    return rng.uniform(-1e6, 1e6)


def value(rng, depth=0):
    kind = rng.randrange(10) if depth < 4 else 0
    if kind <= 5:
        return scalar(rng)
    if kind == 6:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(value(rng, depth + 1) for _ in range(rng.randrange(3)))
    return {text(rng): value(rng, depth + 1) for _ in range(rng.randrange(5))}


def test_fingerprint_is_the_hashlib_recipe_on_generated_values():
    rng = random.Random(11)
    for i in range(5000):
        obj = value(rng)
        expected = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
        assert lockstep.canonical(obj) == expected, (i, obj)
        assert lockstep.fingerprint(obj) == hashlib_recipe(obj), (i, obj)


def test_every_special_scalar_alone_and_as_a_key():
    for x in SPECIAL_FLOATS + SPECIAL_INTS + ALPHABET + [True, False, None]:
        assert lockstep.fingerprint(x) == hashlib_recipe(x), x
        assert lockstep.fingerprint({"k": [x]}) == hashlib_recipe({"k": [x]}), x
    keys = {c: i for i, c in enumerate(ALPHABET)}
    keys.update({"\U0001f600": 1, "\ue000": 2, "é": 3, "": 4})
    assert lockstep.canonical(keys) == json.dumps(keys, sort_keys=True, separators=(",", ":")).encode()


def test_subclasses_convert_as_json_does():
    class F(float):
        pass

    obj = OrderedDict([("b", np.float64(0.1)), ("a", F(2.0)), ("c", (1, [2]))])
    assert lockstep.fingerprint(obj) == hashlib_recipe(obj)


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"x": [np.int64(3)]}, "/x/0"),
        ({"x": np.zeros(2)}, "/x"),
        ({"x": {1: 2}}, "/x"),
        ({"a/b": {"~": object()}}, "/a~1b/~0"),
        ("\ud800", "top level"),
        (np.float32(1.5), "top level"),
    ],
)
def test_values_json_refuses_are_canonical_errors_naming_the_pointer(bad, where):
    with pytest.raises(lockstep.CanonicalError) as info:
        lockstep.fingerprint(bad)
    assert where in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, lockstep.LockstepError)


def test_jcs_profile_and_strict_profile():
    assert lockstep.canonical({"b": 1e30, "a": -0.0, "\U0001f600": 1, "\ue000": 2}, "jcs") == (
        '{"a":0,"b":1e+30,"\U0001f600":1,"\ue000":2}'.encode()
    )
    with pytest.raises(lockstep.CanonicalError, match="/0"):
        lockstep.canonical([math.nan], "jcs")
    with pytest.raises(lockstep.CanonicalError):
        lockstep.canonical([math.inf], "python-strict")
    with pytest.raises(lockstep.ConfigError, match="unknown profile"):
        lockstep.canonical(1, "yaml")


def test_same_bytes_as_the_cli(cli):
    rng = random.Random(5)
    docs = [value(rng) for _ in range(40)]
    # NaN and infinities are not JSON the CLI reads; keep finite documents.
    docs = [d for d in docs if "NaN" not in json.dumps(d) and "Infinity" not in json.dumps(d)]
    docs.append({"seed": 0, "target": 0, "cookies": {}, "visits": 0, "cache": None})
    for doc in docs:
        text = json.dumps(doc).encode()
        assert cli("canon", input=text).stdout.rstrip(b"\n") == lockstep.canonical(doc)
        assert cli("fingerprint", input=text).stdout.decode().split()[0] == lockstep.fingerprint(doc)
        try:
            jcs = lockstep.canonical(doc, "jcs")
        except lockstep.CanonicalError:
            assert cli("canon", "--profile", "jcs", input=text, check=False).returncode == 2
        else:
            assert cli("canon", "--profile", "jcs", input=text).stdout.rstrip(b"\n") == jcs


def test_diff_matches_the_cli(cli, tmp_path):
    a = {"cache": None, "cookies": {"a/b": 1}, "list": [1, 2], "x": 1}
    b = {"cache": 0, "cookies": {"previous~run": True}, "list": [1], "x": 1.0}
    d = lockstep.diff(a, b)
    assert d and not d.equal
    assert d.different_fields == ["cache", "cookies", "list", "x"]
    assert [(c.pointer, c.kind) for c in d.changes] == [
        ("/cache", "changed"),
        ("/cookies/a~1b", "removed"),
        ("/cookies/previous~0run", "added"),
        ("/list/1", "removed"),
        ("/x", "changed"),
    ]
    assert d.changes[2].before is lockstep.MISSING and d.changes[2].after is True
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    out = cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), check=False)
    assert out.returncode == 1
    assert out.stdout.decode() == str(d) + "\n"
    record = json.loads(cli("diff", "--json", str(tmp_path / "a.json"), str(tmp_path / "b.json"), check=False).stdout)
    assert record["different_fields"] == d.different_fields
    assert not lockstep.diff(a, dict(a))

"""--fields serialises plain objects by their attributes (issue 10 item 9)."""

import numpy as np

from lockstep_adapter import wire


class Timer:
    def __init__(self):
        self.left = 3
        self.owner = None


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1
        self.b = np.arange(3, dtype=np.int16)


class Opaque:
    __slots__ = ()


def test_an_object_is_serialised_by_its_attributes_not_its_address():
    """knights_archers_zombies kept its spawn timer across reset and the audit conformed,
    because the timer object was sent as its repr, the same address every time."""
    t = Timer()
    before = wire.state_json(t, [])
    t.left = 2
    after = wire.state_json(t, [])
    assert before != after
    assert before == {"__class__": f"{__name__}.Timer", "left": 3, "owner": None}


def test_slots_arrays_cycles_and_depth():
    fallbacks = []
    s = wire.state_json(Slotted(), fallbacks)
    assert s["a"] == 1
    assert s["b"] == {"dtype": "<i2", "shape": [3], "bytes": "AAABAAIA"}
    t = Timer()
    t.owner = t
    assert wire.state_json(t, fallbacks)["owner"] == "<cycle>"
    deep = [[[[[[[[[[1]]]]]]]]]]
    assert "<depth limit>" in repr(wire.state_json(deep, fallbacks))
    assert fallbacks == []


def test_what_has_no_state_falls_back_to_repr_and_is_named():
    fallbacks = []
    out = wire.state_json({"x": Opaque()}, fallbacks, "/field")
    assert out["x"].startswith("<")
    assert fallbacks == ["/field/x"]


def test_rngs_and_functions_are_stable():
    rng = np.random.default_rng(5)
    assert wire.state_json(rng, [])["bit_generator"] == "PCG64"
    assert wire.state_json(test_rngs_and_functions_are_stable, []) == (
        f"<{__name__}.test_rngs_and_functions_are_stable>"
    )

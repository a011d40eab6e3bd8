"""The env's attributes as its starting state (issue 10 item 9, issue 29 item 1)."""

import collections
import random

import numpy as np

from lockstep_adapter import attributes
from lockstep_adapter.attributes import SET_KEY, SKIPPED_FIELD, attribute_state, inferred_state


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


class Env:
    """A user's env as the issue tells it: reset forgets `visited`."""

    lockstep_seedless = True

    def __init__(self):
        self.visited = []
        self.seen = set()
        self.rng = np.random.default_rng(1)
        self.py_rng = random.Random(2)
        self.timer = Timer()
        self.handle = Opaque()
        self.frame = 0
        self.history = collections.deque([1, 2], maxlen=4)
        self.by_cell = {(0, 1): "wall"}

    def step(self):
        return self


def test_an_object_is_serialised_by_its_attributes_not_its_address():
    """knights_archers_zombies kept its spawn timer across reset and the audit conformed,
    because the timer object was sent as its repr, the same address every time."""
    t = Timer()
    before = attribute_state(t)
    t.left = 2
    after = attribute_state(t)
    assert before != after
    assert before == {"__class__": f"{__name__}.Timer", "left": 3, "owner": None}


def test_slots_arrays_cycles_and_depth():
    skipped = {}
    s = attribute_state(Slotted(), skipped)
    assert s["a"] == 1
    assert s["b"] == {"dtype": "<i2", "shape": [3], "bytes": "AAABAAIA"}
    t = Timer()
    t.owner = t
    assert attribute_state(t, skipped)["owner"] == "<cycle>"
    assert skipped == {}
    deep = 1
    for _ in range(attributes.DEPTH_MAX + 2):
        deep = [deep]
    assert f"<skipped nested deeper than {attributes.DEPTH_MAX}>" in repr(attribute_state(deep, skipped, "/deep"))
    assert list(skipped) == ["/deep" + "/0" * attributes.DEPTH_MAX]


def test_what_has_no_state_is_a_stable_marker_and_is_named():
    skipped = {}
    out = attribute_state({"x": Opaque()}, skipped, "/field")
    assert out["x"] == f"<skipped {__name__}.Opaque>"
    assert skipped == {"/field/x": f"{__name__}.Opaque"}


def test_rngs_and_functions_are_stable():
    rng = np.random.default_rng(5)
    assert attribute_state(rng)["bit_generator"] == "PCG64"
    assert attribute_state(random.Random(3)) == attribute_state(random.Random(3))
    assert attribute_state(random.Random(3)) != attribute_state(random.Random(4))
    assert attribute_state(test_rngs_and_functions_are_stable) == (
        f"<{__name__}.test_rngs_and_functions_are_stable>"
    )


def test_sets_are_sorted_members_whatever_the_hash_order():
    a = attribute_state({"b", "a", (2, 1)})
    b = attribute_state({(2, 1), "a", "b"})
    assert a == b == {SET_KEY: ["a", "b", [2, 1]]}


def test_the_inferred_state_is_every_attribute_and_names_what_it_skipped():
    env = Env()
    state = inferred_state(env, exclude={"frame"})
    assert sorted(state) == sorted(
        ["visited", "seen", "rng", "py_rng", "timer", "handle", "history", "by_cell", SKIPPED_FIELD]
    ), "lockstep's own hooks and the excluded attribute are not state"
    assert state["history"] == [1, 2]
    assert state["by_cell"] == {"[0,1]": "wall"}
    assert state[SKIPPED_FIELD] == {"/handle": f"{__name__}.Opaque"}
    before = state["visited"]
    env.visited.append([0, 1])
    assert inferred_state(env)["visited"] != before


def test_an_attribute_pointing_back_at_the_env_is_a_cycle():
    env = Env()
    env.timer.owner = env
    assert inferred_state(env)["timer"]["owner"] == "<cycle>"


def test_many_values_of_one_opaque_kind_are_one_entry():
    skipped = {f"/h/{i}": "SwigPyObject" for i in range(12)}
    skipped["/surf"] = "pygame.Surface"
    assert attributes.skipped_summary(skipped) == {
        "/h/0": "SwigPyObject, 12 values like it",
        "/surf": "pygame.Surface",
    }


def test_exclusions_are_pointer_patterns():
    env = Env()
    env.agents = [Timer(), Timer()]
    state = inferred_state(env, exclude=["frame", "/agents/*/left", "/by_cell/[0,1]"])
    assert "frame" not in state
    assert state["agents"] == [{"__class__": f"{__name__}.Timer", "owner": None}] * 2
    assert state["by_cell"] == {}


class Handle:
    """State kept where attributes do not show it, given by ``__getstate__`` (as pymunk's)."""

    def __init__(self, x):
        self._c = Opaque()
        self._x = x

    def __getstate__(self):
        return {"x": self._x}


def test_objects_as_keys_and_getstate():
    a = attribute_state({Handle(1): "a", Handle(2): "b"})
    b = attribute_state({Handle(2): "b", Handle(1): "a"})
    assert a == b, "no address, no insertion order"
    assert a[SET_KEY][0][0] == {"__class__": f"{__name__}.Handle", "__getstate__": {"x": 1}}


def test_what_the_review_found_reads_calmly():
    """A logger, a nested EzPickle env, SystemRandom, an int key in __dict__, a user's "$set"
    key, list exclusions and an object graph too big to read (issue 29 item 1's review)."""
    import logging

    import gymnasium

    class Holder:
        pass

    h = Holder()
    h.logger = logging.getLogger("mine")
    h.logger.debug("fills the logger's cache")
    h.inner = gymnasium.make("CartPole-v1").unwrapped
    h.inner.reset(seed=0)
    h.sysrand = random.SystemRandom()
    h.__dict__[3] = "int key"
    h.query = {"$set": ["a"]}
    h.cells = [1, 2, 3]
    skipped = {}
    state = attribute_state(h, skipped)
    assert state["logger"] == "<logger mine>"
    assert "state" in state["inner"], "EzPickle's constructor arguments are not the state"
    first = state["inner"]["state"]
    h.inner.reset(seed=1)
    assert attribute_state(h)["inner"]["state"] != first
    assert state["3"] == "int key"
    assert state["query"] == {"$$set": ["a"]}
    assert "sysrand" in state
    out = inferred_state(h, exclude=["/cells/1", "nothing_here"], unused=(unused := []))
    assert out["cells"] == [1, 3]
    assert unused == ["/nothing_here"]


def test_an_attribute_too_big_to_read_is_skipped_whole():
    class Cell:
        pass

    cells = [Cell() for _ in range(30)]
    for c, after in zip(cells, cells[1:]):
        c.links = [after] * 16  # one object, reached by 16 paths from each cell before it
    skipped = {}
    out = attribute_state({"grid": cells}, skipped, "/world")
    assert out == f"<skipped more than {attributes.NODES_MAX} values>"
    assert skipped == {"/world": f"more than {attributes.NODES_MAX} values"}


def test_the_reasons_for_one_set_pointer_do_not_depend_on_reading_order():
    import threading

    class A:
        def __init__(self, x):
            self.x = x

    a, b = A(threading.Lock()), A(object())
    one, two = {}, {}
    attribute_state({a, b}, one, "/s")
    attribute_state({b, a}, two, "/s")
    assert one == two

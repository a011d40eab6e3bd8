"""Issue 30 item 1: spaces matched by what they are (``isinstance``), BrowserGym's spaces as
observations, and Gymnasium ids whose namespace a module registers."""

import base64
import json
import os
import subprocess
import sys

import numpy as np
from gymnasium import spaces

from lockstep_adapter import wire

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..")


# BrowserGym's own space classes, as browsergym.core.spaces defines them (no browsergym here).
class Unicode(spaces.Text):
    def contains(self, x):
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class AnyDict(spaces.Space):
    def contains(self, x):
        return isinstance(x, dict)


class AnyBox(spaces.Space):
    def __init__(self, low, high, shape, dtype):
        super().__init__(shape, dtype)
        self.low, self.high = low, high


class MissionSpace(spaces.Space):
    """MiniGrid's, by name: a string space outside Gymnasium."""

    max_length = 16


class BabyAIMission(MissionSpace):
    """A subclass (BabyAI's): once refused because the adapter matched class names."""


UNBOUNDED = 2**32 - 1


def browser_observation_space():
    return spaces.Dict(
        {
            "chat_messages": spaces.Sequence(spaces.Dict({"role": Unicode(min_length=0, max_length=UNBOUNDED), "message": Unicode(min_length=0, max_length=UNBOUNDED)})),
            "goal": Unicode(min_length=0, max_length=UNBOUNDED),
            "screenshot": AnyBox(0, 255, (-1, -1, 3), np.uint8),
            "extra_element_properties": AnyDict(),
            "elapsed_time": spaces.Box(0, np.inf, (1,), np.float64),
        }
    )


def _decoded(encoded, key):
    a = json.loads(encoded)[key]
    return a["shape"], base64.b64decode(a["data"])


def test_subclasses_are_their_bases_kind():
    class MyDiscrete(spaces.Discrete):
        pass

    assert wire._space_kind(MyDiscrete(3)) == "Discrete"
    assert wire._space_kind(Unicode(max_length=5)) == "Text"
    assert wire._space_kind(BabyAIMission()) == "MissionSpace"
    assert wire.declare_space(MyDiscrete(3)) == {"type": "discrete", "n": 3, "start": 0}
    assert wire.ActionDecoder(MyDiscrete(3)).decode(2) == 2


def test_browsergym_observations_travel():
    space = browser_observation_space()
    leaves = wire.observation_keys(space)
    assert sorted(leaves) == ["chat_messages", "elapsed_time", "extra_element_properties", "goal", "screenshot"]
    for key in leaves:
        declared = wire.declare_space(leaves[key])
        assert declared["type"] == "box", (key, declared)
        assert len(declared["low"]) < 100, "no bound listed per character of a 2**32 - 1 text"
    enc = wire.ObservationEncoder(space)
    obs = {
        "chat_messages": [{"role": "user", "message": "caf\u00e9"}],
        "goal": "Click the button",
        "screenshot": np.arange(12, dtype=np.uint8).reshape(2, 2, 3),
        "extra_element_properties": {"b": 2, "a": {"visible": True}},
        "elapsed_time": np.array([0.5]),
    }
    text = enc.encode(obs)
    shape, data = _decoded(text, "chat_messages")
    assert json.loads(data) == [{"message": "caf\u00e9", "role": "user"}]
    _, data = _decoded(text, "extra_element_properties")
    assert data == b'{"a":{"visible":true},"b":2}', "canonical: keys sorted, whatever the dict's order"
    assert _decoded(text, "goal")[1] == b"Click the button"
    assert _decoded(text, "screenshot")[0] == [2, 2, 3]


def _serve(target, extra_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_DIR, extra_path]))
    out = subprocess.run([sys.executable, "-m", "lockstep_adapter", "gymnasium", target], input=b"", capture_output=True, env=env, timeout=120)
    return json.loads(out.stdout.splitlines()[0])


def test_an_id_is_registered_by_importing_its_namespace(tmp_path):
    pkg = tmp_path / "fakegym"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks.py").write_text('import gymnasium\ngymnasium.register(id="fakegym/tasks.walk-v0", entry_point="lockstep_adapter.testing:walker")\n')
    hello = _serve("fakegym/tasks.walk-v0", str(tmp_path))
    assert hello["ok"] is True, hello
    assert hello["env_id"] == "gymnasium:fakegym/tasks.walk-v0"
    hello = _serve("nosuchgym/tasks.walk-v0", str(tmp_path))
    assert hello["ok"] is False
    assert "name the module that registers it as MODULE:nosuchgym/tasks.walk-v0 (e.g. nosuchgym.tasks:nosuchgym/tasks.walk-v0)" in hello["error"], hello


def test_browsergym_0_14s_unicode_a_plain_space_is_text():
    # browsergym-core 0.14.3 defines Unicode on gymnasium's Space, not Text (found running
    # MiniWoB through it): served as Text, of no declared length.
    namespace = {}
    exec("class Unicode(Space):\n    def contains(self, x):\n        return isinstance(x, str)\n", {"Space": spaces.Space}, namespace)
    plain = namespace["Unicode"]()
    assert wire._space_kind(plain) == "Text"
    assert wire.declare_space(plain)["shape"] == [0]

"""Tiny envs for test_causes.py: each step reads one nondeterministic source on the line marked
``# SOURCE: name``, which the tests look up to know the line a cause must name."""

import datetime
import glob
import os
import random
import secrets
import sqlite3
import subprocess
import time
import urllib.request
import uuid
from time import time as wall_time

import gymnasium
import numpy as np
from gymnasium import spaces

# A module global a step changes (shared_state "cause_envs.STEPS").
STEPS = 0


def line_of(marker):
    """The line of ``# SOURCE: marker`` in this file."""
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# SOURCE: {marker}"):
                return number
    raise LookupError(marker)


class Env:
    """Reset and step do nothing nondeterministic; a subclass's ``read`` does."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.rng = np.random.default_rng(0)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        return 0, {}

    def step(self, action):
        return self.read(), 0.0, False, False, {}

    def read(self):
        return 0


class GlobalRandom(Env):
    def read(self):
        return random.random()  # SOURCE: global-random


class GlobalRandomThrice(Env):
    def read(self):
        return [random.random() for _ in range(3)]  # SOURCE: global-random-thrice


class RandomChoice(Env):
    def read(self):
        return random.choice([1, 2, 3])  # SOURCE: random-choice


class HiddenInstance(Env):
    def read(self):
        rng = random._inst
        return rng.random()  # SOURCE: hidden-instance


class ReseedsRandom(Env):
    """Seeds the global RNG with an integer: a seed is not a read."""

    def read(self):
        random.seed(5)
        return 0


class NumpyGlobal(Env):
    def read(self):
        return np.random.normal()  # SOURCE: numpy-global


class NumpyReseed(Env):
    """``np.random.seed(int)`` is a reseed, not a read."""

    def read(self):
        np.random.seed(3)
        return 0


class NumpyUnseeded(Env):
    def read(self):
        return np.random.default_rng().random()  # SOURCE: numpy-unseeded


class RandomUnseeded(Env):
    def read(self):
        return random.Random().random()  # SOURCE: random-unseeded


class SpaceUnseeded(Env):
    def __init__(self):
        super().__init__()
        self.action_space = spaces.Discrete(3)

    def read(self):
        return int(self.action_space.sample())  # SOURCE: space-unseeded


class Clock(Env):
    def read(self):
        return time.time()  # SOURCE: clock


class ImportedClock(Env):
    def read(self):
        return wall_time()  # SOURCE: imported-clock


class Now(Env):
    def read(self):
        return datetime.datetime.now().isoformat()  # SOURCE: now


class Pid(Env):
    def read(self):
        return os.getpid()  # SOURCE: pid


class Address(Env):
    def read(self):
        return id(self)  # SOURCE: address


class DeepCopy(Env):
    """``copy.deepcopy`` calls ``id()`` itself: not the env's read of an address."""

    def read(self):
        import copy

        return copy.deepcopy({"a": [1, 2]})


class Uuid1(Env):
    def read(self):
        return str(uuid.uuid1())  # SOURCE: uuid1


class Urandom(Env):
    def read(self):
        return os.urandom(4)  # SOURCE: urandom


class Token(Env):
    def read(self):
        return secrets.token_hex(4)  # SOURCE: token


class Uuid4(Env):
    def read(self):
        return str(uuid.uuid4())  # SOURCE: uuid4


class Listing(Env):
    def read(self):
        return os.listdir(self.kwargs["directory"])  # SOURCE: listdir


class Globbing(Env):
    def read(self):
        return glob.glob(os.path.join(self.kwargs["directory"], "*"))  # SOURCE: glob


class CountsSteps(Env):
    def read(self):
        global STEPS
        STEPS += 1
        return STEPS


class FirstSeedWins(Env):
    """A class-level cache of layouts, filled by the first reset in the process."""

    _levels = {}

    def reset(self, seed=None, options=None):
        super().reset(seed)
        FirstSeedWins._levels.setdefault("layout", [seed, 1])
        return 0, {}


class Honest(gymnasium.Env):
    """Everything from generators it seeds: no cause at all."""

    def __init__(self):
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float64)
        self.rng = None

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.action_space.seed(seed)
        return self.np_random.normal(size=2), {}

    def step(self, action):
        push = int(self.action_space.sample())
        obs = self.rng.normal(size=2) + self.np_random.normal(size=2) + push
        return obs, 0.0, False, False, {"order": sorted({"b", "a"})}


class LazyNpRandom(gymnasium.Env):
    """Uses Gymnasium's ``self.np_random`` without ever reset with a seed: Gymnasium seeds it
    from entropy the first time it is read."""

    def reset(self, seed=None, options=None):
        return 0, {}

    def step(self, action):
        return self.np_random.random(), 0.0, False, False, {}  # SOURCE: lazy-np-random


class HomeCache(Env):
    """Caches its layout in ``~/.cache/walker``, where a later process finds it."""

    def reset(self, seed=None, options=None):
        path = os.path.expanduser("~/.cache/walker/layout.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:  # SOURCE: home-write
            f.write("[1, 2]")
        return 0, {}

    def read(self):
        with open(os.path.expanduser("~/.cache/walker/layout.json")) as f:  # SOURCE: home-read
            return f.read()


class ReadsFiles(Env):
    """Reads each of ``paths``: imports, the installation and /proc are not effects."""

    def read(self):
        for path in self.kwargs["paths"]:
            with open(path, "rb") as f:
                f.read(10)
        return 0


class Database(Env):
    def read(self):
        sqlite3.connect(":memory:").close()
        connection = sqlite3.connect(self.kwargs["path"])  # SOURCE: sqlite
        connection.close()
        return 0


class Fetches(Env):
    def read(self):
        with urllib.request.urlopen(self.kwargs["url"], timeout=10) as response:  # SOURCE: http
            return response.read()


class RunsTrue(Env):
    def read(self):
        return subprocess.run(["true"], check=True).returncode  # SOURCE: subprocess


class LazyImport(Env):
    """Imports a module the first time it steps: the import system lists directories, reads
    the source and writes ``__pycache__``; none of it is the env's."""

    def read(self):
        import importlib

        return importlib.import_module(self.kwargs["module"]).VALUE

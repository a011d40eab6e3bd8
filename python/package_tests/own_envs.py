"""A user's own env as issue 29 tells it: forty lines whose ``reset`` forgets ``self.visited``."""

import gymnasium
import numpy as np
from gymnasium import spaces


class Walk(gymnasium.Env):
    def __init__(self, forget=True):
        self.observation_space = spaces.Box(0, 9, (2,), np.int64)
        self.action_space = spaces.Discrete(4)
        self.forget = forget
        self.visited = []

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.integers(0, 9, 2)
        if not self.forget:
            self.visited = []
        return self.pos.copy(), {}

    def step(self, action):
        move = [(0, 1), (1, 0), (0, -1), (-1, 0)][int(action)]
        self.pos = np.clip(self.pos + move, 0, 9)
        self.visited.append([int(self.pos[0]), int(self.pos[1])])
        return self.pos.copy(), 0.0, False, False, {}


def forgetful():
    return Walk(forget=True)


def honest():
    return Walk(forget=False)


def global_rng_walker():
    """The adapter's walker whose step noise comes from numpy's global RNG (issue 27)."""
    from lockstep_adapter import testing

    return testing.walker("global_rng")


def home_cache_walker():
    """The walker that caches its first layout under ``$XDG_CACHE_HOME`` (issue 27)."""
    from lockstep_adapter import testing

    return testing.walker("home_cache")


def twin():
    """webtask's Python twin, its partial reset, its data under ``$LOCKSTEP_TWIN_DATA``."""
    import os

    from lockstep_adapter import webtwin

    return webtwin.make(data=os.environ["LOCKSTEP_TWIN_DATA"], reset="partial")


def clicker():
    """A text-action env with BrowserGym's observation shapes (issue 30)."""
    from lockstep_adapter import testing

    return testing.clicker()

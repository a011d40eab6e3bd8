"""Gymnasium envs that break "fixed seed, same episode" in the ways lockstep.check must catch.
Importable by name (``faulty_envs:global_rng``), so the process check runs on them too."""

import gymnasium
import numpy as np
from gymnasium import spaces


class _Walk(gymnasium.Env):
    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = spaces.Discrete(3)
        self.pos = np.zeros(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.pos = self.np_random.normal(size=2)
        return self.pos.copy(), {}

    def noise(self):
        return self.np_random.normal(scale=0.01, size=2)

    def step(self, action):
        self.t += 1
        self.pos = self.pos + (int(action) - 1) * 0.1 + self.noise()
        return self.pos.copy(), float(-np.abs(self.pos).sum()), False, self.t >= 40, {"t": self.t}


class GlobalRng(_Walk):
    """Seeds numpy's process-global RNG at reset and draws step noise from it: each instance
    alone replays, but two instances in one process take each other's draws."""

    def reset(self, seed=None, options=None):
        np.random.seed(seed)
        return super().reset(seed=seed)

    def noise(self):
        return np.random.normal(scale=0.01, size=2)


class SharedCache(_Walk):
    """Keeps a cache at class level, shared by every instance and never cleared."""

    cache = []

    def step(self, action):
        obs, reward, term, trunc, info = super().step(action)
        SharedCache.cache.append(int(action))
        info["cached"] = len(SharedCache.cache)
        return obs, reward, term, trunc, info


class LeakyReset(_Walk):
    """Its reset keeps the visit counter of the last episode."""

    visits = 0

    def __init__(self):
        super().__init__()
        self.visits = 0

    def step(self, action):
        self.visits += 1
        obs, reward, term, trunc, info = super().step(action)
        info["visits"] = self.visits
        return obs, reward, term, trunc, info


class UnseededGlobalRng(_Walk):
    """Starts an unseeded ``reset()`` from numpy's process-global RNG: the first episode of a
    training loop (``reset(seed=S)``) replays, the ones after it (``reset()``) do not."""

    def reset(self, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        if seed is None:
            self.pos = np.random.normal(size=2)
            obs = self.pos.copy()
        return obs, info


class FirstSeedWins(_Walk):
    """Caches its generated layout at class level by name, not by seed: every instance in the
    process starts where the first seed reset in it started (a vector env's sub-envs alike)."""

    _levels = {}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = FirstSeedWins._levels.setdefault("layout", self.pos.copy()).copy()
        return self.pos.copy(), {}


def first_seed_wins():
    return FirstSeedWins()


def good():
    return _Walk()


def global_rng():
    return GlobalRng()


def shared_cache():
    return SharedCache()


def leaky_reset():
    return LeakyReset()


def unseeded_global_rng():
    return UnseededGlobalRng()

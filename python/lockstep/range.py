"""The range as a PettingZoo ``ParallelEnv``: ``lockstep.range.parallel_env(...)``.

The env is the Rust range itself (``lockstep_range``), stepped from Python: observations are
numpy arrays copied once from the Rust transition, rewards floats, infos plain dicts. Agent
names, spaces, dtypes and shapes come from the range's own spec, so this module never
hard-codes the range's layout. The same name, seed and actions give the same bytes as
``lockstep trace --env NAME`` (tested), because it is the same code.

Needs ``gymnasium`` (spaces) and, for the ``ParallelEnv`` base class, ``pettingzoo``:
``pip install "lockstep[pettingzoo]"``.
"""

import json
import secrets
import warnings

import numpy as np

from . import _native
from ._errors import ConfigError

try:
    import gymnasium
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - reported when an env is made
    gymnasium = None

try:
    from pettingzoo.utils.env import ParallelEnv as _Base
except ImportError:  # pragma: no cover - the env still works, without the base class
    _Base = object

__all__ = [
    "parallel_env",
    "vector_env",
    "env_name",
    "RangeParallelEnv",
    "RangeVectorEnv",
    "scenarios",
    "presets",
]

def scenarios():
    """The scenario names (docs/range.md), from the Rust range."""
    return tuple(_native.range_catalogue()[0])


def presets():
    """The preset names (docs/range.md), from the Rust range."""
    return tuple(_native.range_catalogue()[1])


def env_name(scenario="ransomware", preset=None, **params):
    """The CLI's env name of this configuration: ``range:SCENARIO[:PRESET][?KEY=JSON&...]``,
    keys sorted. ``lockstep trace --env NAME`` and ``lockstep check NAME`` run the same env."""
    name = f"range:{scenario}"
    if preset is not None:
        name += f":{preset}"
    if params:
        parts = []
        for key in sorted(params):
            text = json.dumps(params[key], separators=(",", ":"), allow_nan=False)
            if any(c in text for c in "&?"):
                raise ConfigError(f"parameter {key}={text}: '&' and '?' cannot appear in an env name")
            parts.append(f"{key}={text}")
        name += "?" + "&".join(parts)
    return name


def parallel_env(scenario="ransomware", preset=None, **params):
    """A PettingZoo ``ParallelEnv`` of the range.

    ``scenario`` is one of :func:`scenarios`, ``preset`` one of ``easy``, ``medium``, ``hard``
    (or ``None``), and ``params`` override fields of the scenario's parameters by name
    (``max_ticks=25``, ``log_latency=3``, ...; docs/range.md). Unknown names raise
    :class:`lockstep.ConfigError`.
    """
    return RangeParallelEnv(env_name(scenario, preset, **params))


def _need_gymnasium():
    if gymnasium is None:
        raise ImportError('lockstep.range needs gymnasium for its spaces: pip install "lockstep[pettingzoo]"')


if gymnasium is not None:

    class MultiDiscrete(_spaces.MultiDiscrete):
        """``gymnasium.spaces.MultiDiscrete`` that also takes the range's flat ``action_mask``
        (one int8 entry per choice, the components' masks concatenated, as lockstep's action
        sampler reads it) in ``sample(mask=...)``, besides gymnasium's tuple of masks."""

        def sample(self, mask=None, probability=None):
            if isinstance(mask, np.ndarray) and mask.ndim == 1 and self.nvec.ndim == 1:
                if mask.shape[0] != int(self.nvec.sum()):
                    raise ValueError(f"a flat mask needs {int(self.nvec.sum())} entries, got {mask.shape[0]}")
                cuts = np.cumsum(self.nvec)[:-1]
                mask = tuple(np.asarray(m, dtype=np.int8) for m in np.split(mask, cuts))
            if probability is None:
                return super().sample(mask=mask)
            return super().sample(mask=mask, probability=probability)


def _space(decl):
    kind = decl["type"]
    if kind == "multi_discrete":
        return MultiDiscrete(np.asarray(decl["nvec"], dtype=np.int64))
    if kind == "discrete":
        return _spaces.Discrete(decl["n"], start=decl.get("start", 0))
    if kind == "box":
        dtype = np.dtype(decl["dtype"])
        shape = tuple(decl["shape"])
        low = np.asarray(decl["low"], dtype=np.float64).reshape(shape).astype(dtype)
        high = np.asarray(decl["high"], dtype=np.float64).reshape(shape).astype(dtype)
        return _spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    raise ConfigError(f"unknown space type {kind!r} in the range's spec")


class RangeParallelEnv(_Base):
    """The range behind PettingZoo's parallel API. Build it with :func:`parallel_env`."""

    metadata = {"name": "lockstep_range_v0", "render_modes": [], "is_parallelizable": True}
    render_mode = None

    def __init__(self, name):
        _need_gymnasium()
        self._core = _native.RangeCore(name)
        self.name = name
        spec = self._core.spec()
        self.spec = spec
        self.possible_agents = [a["name"] for a in spec["agents"]]
        self._action_spaces = {a["name"]: _space(a["action_space"]) for a in spec["agents"]}
        self._observation_spaces = {
            a["name"]: _spaces.Dict({k: _space(s) for k, s in sorted(a["observation_space"].items())})
            for a in spec["agents"]
        }
        self.agents = []
        self.seed_used = None
        self._logs = []

    def observation_space(self, agent):
        return self._observation_spaces[agent]

    def action_space(self, agent):
        return self._action_spaces[agent]

    def reset(self, seed=None, options=None):
        """Starts an episode. Without ``seed``, the next seed of the chain the last seed
        started (as a Gymnasium env's ``np_random`` continues after ``reset(seed=S)``, so a
        training loop that seeds its first reset replays every episode); before any seeded
        reset, one drawn from the OS. The seed is kept in ``seed_used``. ``options`` may hold
        ``preset`` and ``params`` (as the range's reset options, docs/range.md); other keys are
        ignored with a warning."""
        if seed is None and self._core.last_seed is None:
            seed = secrets.randbits(63)
        if options:
            unknown = sorted(set(options) - {"preset", "params"})
            if unknown:
                warnings.warn(f"lockstep.range: ignoring unknown reset options {unknown} (known: preset, params)")
                options = {k: v for k, v in options.items() if k in ("preset", "params")}
        obs, infos = self._core.reset(None if seed is None else int(seed), options or None)
        self.seed_used = int(self._core.last_seed)
        self.agents = list(self.possible_agents)
        self._logs = list(self._core.logs())
        return obs, infos

    def step(self, actions):
        """One step: ``actions`` maps live agents to ``[type, target]``; a missing agent
        sleeps. Agents that end (all at once: termination is scenario-wide) leave
        ``agents``."""
        obs, rewards, terms, truncs, infos = self._core.step(actions)
        self.agents = [a for a in self.agents if not (terms.get(a) or truncs.get(a))]
        self._logs.extend(self._core.logs())
        return obs, rewards, terms, truncs, infos

    def state(self):
        """The whole core state as plain Python (what the range's reset contract covers)."""
        return self._core.state()

    def logs(self):
        """The SIEM log lines the last reset or step emitted."""
        return self._core.logs()

    def lockstep_drain_logs(self):
        """Log lines since the last call (what ``lockstep_adapter`` digests with each
        transition)."""
        out, self._logs = self._logs, []
        return out

    def render(self):
        return None

    def close(self):
        pass

    def __repr__(self):
        return f"<lockstep.range {self.name}>"


def vector_env(scenario="ransomware", n=1, seed=0, threads=1, preset=None, **params):
    """N range sub-envs stepped together in Rust (``lockstep_range::Batch``); see
    :class:`RangeVectorEnv`. Arguments as :func:`parallel_env`, plus the batch size ``n``,
    the first seed and the stepping threads."""
    return RangeVectorEnv(env_name(scenario, preset, **params), n, seed, threads)


class RangeVectorEnv:
    """A vector env over the range: every observation is a numpy array of shape ``[N, ...]``
    (``obs[agent][key]``), rewards ``[N, 4]`` float64 in :attr:`agents` order, terminations
    and truncations ``[N]`` bool; actions an int64 array ``[N, 4, 2]`` (sub-env, agent,
    ``[type, target]``).

    Auto-reset: sub-env i starts at ``seed + i``; its episode k has seed ``seed + i + k * N``.
    A step that ends a sub-env's episode returns that final transition; the next step resets
    it with its next seed instead (its actions are ignored) and returns the reset (reward 0,
    flags false). Each step's ``infos`` records it: ``infos["seed"]`` and ``infos["episode"]``
    (``[N]`` uint64) are every sub-env's current episode seed and count, ``infos["reset"]``
    (``[N]`` bool) the sub-envs this step reset, so any sub-episode replays alone with
    ``parallel_env(...).reset(seed=infos["seed"][i])``. Per-agent infos and log lines of one
    sub-env: :meth:`sub_env_infos` (rendered on demand).
    """

    def __init__(self, name, n, seed=0, threads=1):
        self.name = name
        self.num_envs = int(n)
        self._threads = int(threads)
        self._seed0 = int(seed)
        self._core = _native.RangeBatchCore(name, self.num_envs, self._seed0, self._threads)
        self.spec = self._core.spec()
        self.agents = [a["name"] for a in self.spec["agents"]]
        self._last_episode = None

    def reset(self, seed=None):
        """Starts over: sub-env i at ``seed + i`` (the seed given at construction when None).
        Returns ``(obs, infos)``."""
        if seed is not None:
            self._seed0 = int(seed)
        self._core = _native.RangeBatchCore(self.name, self.num_envs, self._seed0, self._threads)
        self._last_episode = None
        return self._core.observations(), self._infos()

    def step(self, actions):
        """One step of every sub-env: ``(obs, rewards, terminations, truncations, infos)``."""
        actions = np.ascontiguousarray(actions, dtype=np.int64)
        self._core.step(actions)
        rewards, terms, truncs = self._core.outcomes()
        return self._core.observations(), rewards, terms, truncs, self._infos()

    def _infos(self):
        seeds, episodes = self._core.seeds()
        if self._last_episode is None:
            reset = np.ones(self.num_envs, dtype=bool)
        else:
            reset = episodes != self._last_episode
        self._last_episode = episodes
        return {"seed": seeds, "episode": episodes, "reset": reset}

    def sub_env_infos(self, i):
        """Sub-env ``i``'s per-agent infos and the log lines its last step emitted, as
        ``parallel_env`` shows them: ``(infos, logs)``."""
        return self._core.transition(i)

    def close(self):
        pass

    def __len__(self):
        return self.num_envs

    def __repr__(self):
        return f"RangeVectorEnv({self.name!r}, n={self.num_envs})"

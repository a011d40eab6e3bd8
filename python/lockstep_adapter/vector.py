"""Gymnasium vector envs behind the protocol: each sub-env an agent, and its twin of single envs.

A training loop runs ``gymnasium.make_vec(ENV_ID, num_envs=N)`` (or a ``SyncVectorEnv`` /
``AsyncVectorEnv``): ``reset(seed=S)`` seeds sub-env ``i`` with ``S + i``, and a sub-env whose
episode ended is reset at its next step, without a seed, that step's action ignored
(Gymnasium's default ``NEXT_STEP`` autoreset mode). Sub-env ``i`` must then replay like one
env seeded ``S + i`` and driven the same way.

:class:`VectorServed` serves the vector env as a parallel multi-agent env whose agents are the
sub-envs (``env_0``, ``env_1``, ...): per step each agent's observation, reward, flags and its
own part of the batched info. :class:`TwinServed` serves ``N`` single envs driven by hand as the
vector env promises to drive them: the reference of lockstep's ``vector`` check, which plays
both with the same actions and names the sub-env, the episode and the step where they part.
"""

import numpy as np

from .server import Served


def agent_name(i):
    return f"env_{i}"


def _plain(value):
    """A sub-env's info value with numpy scalars as Python ones: the batched info turns a
    Python float into ``np.float64`` (and back is what the single env gave), so both sides of
    the comparison are made plain the same way."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def split_info(info, i, n):
    """Sub-env ``i``'s part of a vector env's batched info: each key whose ``_key`` mask is set
    for ``i`` (nested dicts, such as RecordEpisodeStatistics' ``episode``, split the same way)."""
    out = {}
    for key, value in info.items():
        if isinstance(key, str) and key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not bool(mask[i]):
            continue
        if isinstance(value, dict):
            out[key] = split_info(value, i, n)
        elif isinstance(value, np.ndarray) and value.shape[:1] == (n,):
            out[key] = _plain(value[i])
        else:
            out[key] = _plain(value)
    return out


class _SubEnvs(Served):
    """What both sides share: ``num_envs`` agents with the single env's spaces."""

    kind = "gymnasium-vector"

    def __init__(self, env, env_id, config, single_action_space, single_observation_space, num_envs, **kwargs):
        self.num_envs = num_envs
        self._single_action = single_action_space
        self._single_obs = single_observation_space
        # The last action each sub-env was given: what a sub-env that just ended is sent (its
        # next step resets it and ignores the action), so that the step is deterministic.
        self._last = {}
        super().__init__(env, env_id, config, **kwargs)

    def _action_spaces(self):
        return {agent_name(i): self._single_action for i in range(self.num_envs)}

    def _observation_spaces(self):
        return {agent_name(i): self._single_obs for i in range(self.num_envs)}

    def _decoded(self, actions):
        """Every sub-env's action: lockstep sends none to a sub-env whose episode just ended."""
        out = []
        for i in range(self.num_envs):
            a = agent_name(i)
            if a in actions:
                self._last[a] = self.action_decoders[a].decode(actions[a])
            elif a not in self._last:
                self._last[a] = self._single_action.sample()
            out.append(self._last[a])
        return out

    def _answer(self, obs_list, rewards, terms, truncs, infos):
        agents = [agent_name(i) for i in range(self.num_envs)]
        return self.transition(
            dict(zip(agents, obs_list)),
            None if rewards is None else {a: float(r) for a, r in zip(agents, rewards)},
            None if terms is None else {a: bool(t) for a, t in zip(agents, terms)},
            None if truncs is None else {a: bool(t) for a, t in zip(agents, truncs)},
            dict(zip(agents, infos)),
            agents,
        )


class VectorServed(_SubEnvs):
    """A Gymnasium ``VectorEnv``: sub-env ``i`` is agent ``env_i``."""

    def __init__(self, env, env_id, config, **kwargs):
        super().__init__(
            env, env_id, dict(config, num_envs=env.num_envs), env.single_action_space,
            env.single_observation_space, env.num_envs, **kwargs,
        )

    def reset(self, seed, options):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs, None, None, None, info)

    def step(self, actions):
        from gymnasium.vector.utils import concatenate, create_empty_array

        batch = create_empty_array(self._single_action, self.num_envs)
        batch = concatenate(self._single_action, self._decoded(actions), batch)
        obs, rewards, terms, truncs, info = self.env.step(batch)
        return self._observe(obs, rewards, terms, truncs, info)

    def _observe(self, obs, rewards, terms, truncs, info):
        from gymnasium.vector.utils import iterate

        n = self.num_envs
        obs_list = list(iterate(self.env.observation_space, obs))
        infos = [split_info(info, i, n) for i in range(n)]
        return self._answer(obs_list, rewards, terms, truncs, infos)

    def unwrapped(self):
        return self.env


class TwinServed(_SubEnvs):
    """``num_envs`` single envs driven as the vector env promises: ``reset(seed=S)`` resets env
    ``i`` with ``S + i``; a step after an env's episode ended resets it without a seed and
    answers the reset's observation with reward 0 and both flags false."""

    def __init__(self, envs, env_id, config, **kwargs):
        self.envs = list(envs)
        first = self.envs[0]
        self._ended = [False] * len(self.envs)
        super().__init__(
            first, env_id, dict(config, num_envs=len(self.envs)), first.action_space,
            first.observation_space, len(self.envs), **kwargs,
        )

    def reset(self, seed, options):
        out = []
        for i, env in enumerate(self.envs):
            out.append(env.reset(seed=None if seed is None else seed + i, options=options))
        self._ended = [False] * len(self.envs)
        return self._answer([o for o, _ in out], None, None, None, [_plain(info) for _, info in out])

    def step(self, actions):
        decoded = self._decoded(actions)
        obs_list, rewards, terms, truncs, infos = [], [], [], [], []
        for i, env in enumerate(self.envs):
            if self._ended[i]:
                obs, info = env.reset()
                reward, term, trunc = 0.0, False, False
            else:
                obs, reward, term, trunc, info = env.step(decoded[i])
            self._ended[i] = bool(term or trunc)
            obs_list.append(obs)
            rewards.append(reward)
            terms.append(term)
            truncs.append(trunc)
            infos.append(_plain(info))
        return self._answer(obs_list, rewards, terms, truncs, infos)

    def close(self):
        for env in self.envs:
            env.close()

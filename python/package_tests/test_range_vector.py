"""lockstep.range.vector_env: sub-env i of the Rust batch equals parallel_env with its seed."""

import numpy as np
import pytest

import lockstep.range


def _sample(rng, mask):
    """A type among the set type bits and a target among the set slot bits (slot 0 if none)."""
    types = np.flatnonzero(mask[:32])
    slots = np.flatnonzero(mask[32:])
    return [int(rng.choice(types)), int(rng.choice(slots)) if len(slots) else 0]


@pytest.mark.parametrize("threads", [1, 2])
def test_sub_envs_equal_single_envs_across_auto_resets(threads):
    n, seed0 = 3, 11
    vec = lockstep.range.vector_env("ransomware", n=n, seed=seed0, threads=threads,
                                    preset="easy", max_ticks=15)
    singles = [lockstep.range.parallel_env("ransomware", preset="easy", max_ticks=15)
               for _ in range(n)]
    agents = vec.agents
    obs, infos = vec.reset()
    single_obs = [s.reset(seed=seed0 + i)[0] for i, s in enumerate(singles)]
    assert list(infos["seed"]) == [seed0 + i for i in range(n)]
    assert infos["reset"].all()
    seeds = [seed0 + i for i in range(n)]
    done = [False] * n
    rng = np.random.default_rng(5)
    resets = 0
    for _ in range(40):
        for i in range(n):
            for agent in agents:
                for key, value in single_obs[i][agent].items():
                    got = obs[agent][key]
                    assert got.shape == (n, *value.shape) and got.dtype == value.dtype
                    assert got[i].tobytes() == value.tobytes(), (i, agent, key)
        actions = np.zeros((n, len(agents), 2), dtype=np.int64)
        for i in range(n):
            for a, agent in enumerate(agents):
                actions[i, a] = _sample(rng, obs[agent]["action_mask"][i])
        obs, rewards, terms, truncs, infos = vec.step(actions)
        assert rewards.shape == (n, len(agents)) and terms.shape == (n,)
        for i in range(n):
            if done[i]:
                # The documented rule: episode k of sub-env i has seed seed0 + i + k * n.
                seeds[i] += n
                single_obs[i] = singles[i].reset(seed=seeds[i])[0]
                assert infos["reset"][i]
                resets += 1
                done[i] = False
                assert (rewards[i] == 0).all()
            else:
                assert not infos["reset"][i]
                acts = {agent: actions[i, a] for a, agent in enumerate(agents)}
                o, r, te, tr, inf = singles[i].step(acts)
                single_obs[i] = o
                assert [rewards[i, a] for a in range(len(agents))] == [r[x] for x in agents]
                sub_infos, logs = vec.sub_env_infos(i)
                assert sub_infos == inf
                assert logs == singles[i].logs()
                done[i] = bool(te[agents[0]] or tr[agents[0]])
                assert bool(terms[i] or truncs[i]) == done[i]
            assert infos["seed"][i] == seeds[i]
    assert resets > 0, "no auto-reset happened"


def test_bad_actions_are_config_errors():
    vec = lockstep.range.vector_env("ransomware", n=2)
    vec.reset()
    with pytest.raises(lockstep.ConfigError, match="shape"):
        vec.step(np.zeros((3, 4, 2), dtype=np.int64))
    with pytest.raises(lockstep.ConfigError):
        lockstep.range.vector_env("ransomware", n=0)

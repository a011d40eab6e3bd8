import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import lockstep
import lockstep.range


def test_spaces_come_from_the_rust_spec():
    env = lockstep.range.parallel_env("ransomware", preset="easy")
    spec = env.spec
    assert env.possible_agents == [a["name"] for a in spec["agents"]]
    for decl in spec["agents"]:
        space = env.observation_space(decl["name"])
        assert sorted(space.spaces) == sorted(decl["observation_space"])
        assert list(env.action_space(decl["name"]).nvec) == decl["action_space"]["nvec"]


def test_observations_are_numpy_arrays_inside_their_spaces():
    env = lockstep.range.parallel_env("ot_stuxnet", max_ticks=60)
    obs, infos = env.reset(seed=9001)
    rng = np.random.default_rng(0)
    for _ in range(60):
        for agent, o in obs.items():
            space = env.observation_space(agent)
            for key, value in o.items():
                assert isinstance(value, np.ndarray) and value.dtype == space[key].dtype
                assert space[key].contains(value), (agent, key)
        if not env.agents:
            break
        actions = {a: env.action_space(a).sample(mask=obs[a]["action_mask"]) for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        assert all(isinstance(r, float) for r in rewards.values())


@pytest.mark.parametrize("scenario", ["ransomware", "apt_espionage"])
def test_pettingzoo_parallel_api_test(scenario):
    env = lockstep.range.parallel_env(scenario, preset="easy")
    # The API test samples its actions from the env's action spaces: seeded, every run of
    # this test plays the same actions.
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(1000 + i)
    with pytest.warns(UserWarning, match="ignoring unknown reset options"):
        parallel_api_test(env, num_cycles=300)


def test_pettingzoo_parallel_seed_test():
    parallel_seed_test(lambda: lockstep.range.parallel_env("ransomware", max_ticks=120), num_cycles=200)


@pytest.mark.parametrize(
    "args, kwargs, seed",
    [
        (("ransomware",), {}, 0),
        (("apt_espionage", "medium"), {"max_ticks": 80}, 7),
        (("ot_stuxnet",), {"log_latency": 3}, 9003),
    ],
)
def test_same_bytes_as_lockstep_trace(cli, args, kwargs, seed):
    name = lockstep.range.env_name(*args, **kwargs)
    expected = cli("trace", "--env", name, "--seed", str(seed), "--steps", "120").stdout.decode().strip()
    # Through lockstep_adapter's encoding of the numpy observations, the Rust protocol reader
    # and the tracer: the Python env shows the CLI's bytes, step by step.
    assert lockstep.trace(lambda: lockstep.range.parallel_env(*args, **kwargs), seed=seed, steps=120) == expected
    assert lockstep.trace(name, seed=seed, steps=120) == expected


def test_range_check_through_python_passes():
    report = lockstep.check("range:ransomware:easy", seeds=range(1), steps=40)
    assert report.passed, report.summary()
    assert report.skipped == {}


def test_bad_names_are_config_errors():
    with pytest.raises(lockstep.ConfigError):
        lockstep.range.parallel_env("nope")
    with pytest.raises(lockstep.ConfigError):
        lockstep.range.parallel_env("ransomware", bogus=1)
    env = lockstep.range.parallel_env("ransomware")
    env.reset(seed=1)
    with pytest.raises(lockstep.ConfigError, match="integers"):
        env.step({"red_operator": "x"})


def test_an_unseeded_reset_continues_the_seed_chain():
    """Issue 26 item 1: the range's reset() without a seed drew from the OS, so a training loop
    that seeds only its first reset replayed its first episode and never the second (the
    continuation check caught it). It continues the chain of the last seed now."""
    a, b = lockstep.range.parallel_env("ransomware"), lockstep.range.parallel_env("ransomware")
    for env in (a, b):
        env.reset(seed=4)
    obs_a, _ = a.reset()
    obs_b, _ = b.reset()
    assert a.seed_used == b.seed_used != 4
    assert all((obs_a[k]["action_mask"] == obs_b[k]["action_mask"]).all() for k in obs_a)
    fresh = lockstep.range.parallel_env("ransomware")
    fresh.reset()
    assert fresh.seed_used not in (4, a.seed_used)

"""The adapter's vector envs: sub-envs as agents, and the twin that drives single envs as the
vector env promises (the reference of lockstep's vector check)."""

import io
import json

import gymnasium
import numpy as np

from lockstep_adapter import server, vector


def run(served_factory, requests):
    inp = io.BytesIO("".join(json.dumps(r) + "\n" for r in requests).encode())
    out = io.BytesIO()
    assert server.serve(served_factory, out=out, inp=inp) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def conversation(n, steps):
    """reset(seed=5), then `steps` steps with every sub-env pushing right (a CartPole pole falls
    within about ten steps, so each sub-env ends and is reset on the way)."""
    reqs = [{"id": 1, "op": "reset", "seed": 5, "options": None}]
    for k in range(steps):
        reqs.append({"id": 2 + k, "op": "step", "actions": {f"env_{i}": 1 for i in range(n)}})
    return reqs


def test_sync_vector_env_and_its_twin_answer_the_same_through_auto_resets():
    n = 3
    vec = lambda: vector.VectorServed(gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="sync"), "CartPole-v1", {})
    twin = lambda: vector.TwinServed([gymnasium.make("CartPole-v1") for _ in range(n)], "CartPole-v1", {"twin": True})
    a, b = run(vec, conversation(n, 30)), run(twin, conversation(n, 30))
    assert a[0]["config"]["num_envs"] == n and [x["name"] for x in a[0]["agents"]] == ["env_0", "env_1", "env_2"]
    ended = [x for x in a[1:] if any(s.get("terminated") for s in x.get("agents", {}).values())]
    assert ended, "the run goes through auto-resets"
    assert a[1:] == b[1:]


def test_cartpoles_own_vector_implementation_is_not_its_single_env():
    n = 2
    own = lambda: vector.VectorServed(
        gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point"), "CartPole-v1", {}
    )
    twin = lambda: vector.TwinServed([gymnasium.make("CartPole-v1") for _ in range(n)], "CartPole-v1", {"twin": True})
    a, b = run(own, conversation(n, 1)), run(twin, conversation(n, 1))
    assert a[1]["agents"]["env_0"]["obs"] != b[1]["agents"]["env_0"]["obs"]


def test_batched_info_is_split_by_its_masks():
    info = {
        "t": np.array([1, 2, 3]),
        "_t": np.array([True, False, True]),
        "episode": {"r": np.array([0.5, 1.5, 2.5]), "_r": np.array([False, True, False])},
        "_episode": np.array([False, True, False]),
    }
    assert vector.split_info(info, 0, 3) == {"t": 1}
    assert vector.split_info(info, 1, 3) == {"episode": {"r": 1.5}}
    assert type(vector.split_info(info, 2, 3)["t"]) is int

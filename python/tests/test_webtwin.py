"""webtask's Python twin on its real layers: a server process, a SQLite file, a cache file.

No mocks: every test starts real server processes and reads the real files.
"""

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from lockstep_adapter import attributes, webtwin

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..")


def _gone(pid, within=5.0):
    """True when process ``pid`` has ended (exited, or a zombie no one has reaped yet)
    within ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _episode(env, seed, actions=(1, 2, 0)):
    obs, info = env.reset(seed=seed)
    out = [(obs.tolist(), info)]
    for a in actions:
        obs, reward, term, trunc, info = env.step(a)
        out.append((obs.tolist(), reward, term, trunc, info))
    return out


def _get(url):
    # No proxy for the local server, whatever the environment says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture
def make_env(tmp_path):
    envs = []

    def make(**kwargs):
        kwargs.setdefault("data", str(tmp_path / f"data{len(envs)}"))
        env = webtwin.make(**kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def test_complete_reset_replays_a_seed_exactly(make_env, tmp_path):
    env = make_env(reset="complete")
    first = _episode(env, 0)
    second = _episode(env, 0)
    assert first == second
    assert first[0][0][1] == -1  # no cached choice at the start
    assert first[-1][2] is True  # terminated after 3 steps
    assert [step[2] for step in first[1:]] == [False, False, True]
    # Another seed in between, then the first again: still the same episode.
    _episode(env, 1, actions=(0, 0, 0))
    assert _episode(env, 0) == first
    # The reset removed the cache file.
    env.reset(seed=0)
    assert not os.path.exists(os.path.join(env.lockstep_data, "cache", "choice.json"))


def test_partial_reset_keeps_the_cached_choice(make_env):
    env = make_env(reset="partial")
    first = _episode(env, 0, actions=(1, 2, 0))
    assert first[0][0][1] == -1
    assert first[1][4] == {"choice": 1}  # the action, cached
    cache = os.path.join(env.lockstep_data, "cache", "choice.json")
    obs, _ = env.reset(seed=0)
    # The reset left the cache file, and the starting observation shows its choice.
    assert os.path.exists(cache)
    with open(cache) as f:
        assert json.load(f) == {"choice": 1}
    assert obs.tolist()[1] == 1
    assert env.cached == 1
    # The first step plays the cached choice, not the action.
    _, _, _, _, info = env.step(2)
    assert info == {"choice": 1}
    second = _episode(env, 0, actions=(1, 2, 0))
    assert second != first
    assert second[0][0][0] == first[0][0][0]  # same target: the seed is the same
    # Visits are reset in both modes.
    assert second[0][0][2] == 0


def test_partial_and_complete_share_the_first_episode(make_env):
    complete, partial = make_env(reset="complete"), make_env(reset="partial")
    assert _episode(complete, 5) == _episode(partial, 5)


def test_the_database_holds_the_visits(make_env):
    env = make_env()
    env.reset(seed=7)
    env.step(0)
    db = os.path.join(env.lockstep_data, "app.db")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT seed, count FROM visits").fetchall() == [(7, 1)]
        env.step(1)
        assert conn.execute("SELECT seed, count FROM visits").fetchall() == [(7, 2)]
        env.reset(seed=7)
        assert conn.execute("SELECT seed, count FROM visits").fetchall() == []
    finally:
        conn.close()


def test_the_server_state_reflects_the_visits(make_env):
    env = make_env()
    url = env.lockstep_server_url
    assert url.startswith("http://127.0.0.1:")
    env.reset(seed=3)
    assert _get(url + "/state") == {"visits": {}}
    obs, *_ = env.step(0)
    assert obs.tolist()[2] == 1
    env.step(0)
    assert _get(url + "/state") == {"visits": {"3": 2}}
    assert webtwin.server_state(url) == {"visits": {"3": 2}}
    env.reset(seed=3)
    assert _get(url + "/state") == {"visits": {}}


def test_an_existing_server_is_used_and_left_running(make_env):
    owner = make_env()
    url = owner.lockstep_server_url
    pid = webtwin.server_pid(url)
    guest = make_env(server_url=url)
    assert guest.lockstep_server_url == url
    guest.reset(seed=4)
    guest.step(1)
    assert webtwin.server_state(url) == {"visits": {"4": 1}}
    guest.close()
    assert not _gone(pid, within=0.5)
    assert webtwin.server_state(url) == {"visits": {"4": 1}}


def test_the_server_ends_when_the_env_closes(make_env):
    env = make_env()
    pid = webtwin.server_pid(env.lockstep_server_url)
    assert pid is not None and not _gone(pid, within=0)
    env.close()
    assert _gone(pid)
    assert webtwin.server_pid(env.lockstep_server_url) is None
    env.close()  # a second close does nothing


def test_the_server_ends_when_the_env_is_collected(tmp_path):
    env = webtwin.make(data=str(tmp_path / "d"))
    pid = webtwin.server_pid(env.lockstep_server_url)
    del env
    import gc

    gc.collect()
    assert _gone(pid)


@pytest.mark.parametrize("death", ["os._exit(0)", "os.kill(os.getpid(), signal.SIGKILL)"])
def test_the_server_ends_with_its_parent_process(tmp_path, death):
    code = (
        "import os, signal, sys\n"
        "from lockstep_adapter import webtwin\n"
        f"env = webtwin.make(data={str(tmp_path / 'd')!r})\n"
        "env.reset(seed=0)\n"
        "env.step(1)\n"
        "print(webtwin.server_pid(env.lockstep_server_url), flush=True)\n"
        f"{death}\n"
    )
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    pid = int(child.stdout.decode().split()[0])
    assert _gone(pid), f"server {pid} outlived its parent"


def test_default_data_is_private_to_each_instance(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    a, b = webtwin.make(), webtwin.make()
    try:
        root = str(tmp_path / "xdg" / "lockstep-webtwin")
        assert os.path.dirname(a.lockstep_data) == root == os.path.dirname(b.lockstep_data)
        assert a.lockstep_data != b.lockstep_data
        # Created together and interleaved, neither reads the other's cached choice.
        a.reset(seed=0)
        b.reset(seed=0)
        a.step(1)
        _, _, _, _, info = b.step(2)
        assert info == {"choice": 2}
        assert os.path.exists(os.path.join(a.lockstep_data, "app.db"))
    finally:
        a.close()
        b.close()
    assert not os.path.exists(a.lockstep_data) and not os.path.exists(b.lockstep_data)


def test_the_starting_state_is_plain_and_the_same_on_every_instance(make_env):
    a, b = make_env(), make_env()
    a.reset(seed=2)
    b.reset(seed=2)
    state = attributes.inferred_state(a)
    assert state == attributes.inferred_state(b)
    assert state["lockstep_skipped"] == {}
    # The wiring (a free port, a directory) is not state.
    assert not any(k.startswith("lockstep_") and k != "lockstep_skipped" for k in state)
    assert state["cached"] is None and state["t"] == 0 and state["reset_mode"] == "complete"
    json.dumps(state)


def test_spaces_and_bad_arguments(make_env):
    env = make_env()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.action_space.n == 3
    assert obs.dtype == np.int64 and obs.shape == (3,)
    for _ in range(3):
        obs, *_ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
    with pytest.raises(ValueError, match="unknown reset"):
        webtwin.make(reset="half")


def test_the_serve_entry_point_exits_when_its_input_closes():
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockstep_adapter.webtwin", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        port = int(proc.stdout.readline())
        url = f"http://127.0.0.1:{port}"
        assert _get(url + "/visit?seed=9") == {"seed": 9, "visits": 1}
        assert _get(url + "/visit?seed=9") == {"seed": 9, "visits": 2}
        assert _get(url + "/state") == {"visits": {"9": 2}}
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(urllib.request.Request(url + "/reset", data=b"", method="POST"), timeout=10) as resp:
            assert json.loads(resp.read()) == {"ok": True}
        assert _get(url + "/state") == {"visits": {}}
        proc.stdin.close()
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_factory_is_served_by_the_adapter(tmp_path):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockstep_adapter", "factory", "lockstep_adapter.webtwin:make", "--kwargs", '{"reset": "partial"}'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["ok"] is True, hello
        assert hello["config"]["kwargs"] == {"reset": "partial"}
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The instance's private directory went with it.
    assert os.listdir(tmp_path / "xdg" / "lockstep-webtwin") == []

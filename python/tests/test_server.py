import io
import json
import os
import subprocess
import sys

import gymnasium

from lockstep_adapter import server, testing, wire

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..")


def run(served_factory, requests):
    inp = io.BytesIO("".join(json.dumps(r) + "\n" for r in requests).encode())
    out = io.BytesIO()
    code = server.serve(served_factory, out=out, inp=inp)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def cartpole():
    env = gymnasium.make("CartPole-v1")
    return server.GymnasiumServed(env, "CartPole-v1", {"k": 1})


def test_cartpole_conversation():
    code, lines = run(
        cartpole,
        [
            {"id": 1, "op": "reset", "seed": 3, "options": None},
            {"id": 2, "op": "step", "actions": {"agent": 1}},
            {"id": 3, "op": "state"},
            {"id": 4, "op": "bogus"},
            {"id": 5, "op": "close"},
        ],
    )
    assert code == 0
    hello, reset, step, state, bogus, close = lines
    assert hello["protocol"] == wire.PROTOCOL and hello["env_id"] == "gymnasium:CartPole-v1"
    assert hello["agents"][0]["name"] == "agent"
    # No contract named: lockstep infers it from the state, every attribute of the env.
    assert "fields" not in hello["contract"]
    assert [m["id"] for m in lines[1:]] == [1, 2, 3, 4, 5]
    obs = wire.decode_array(reset["agents"]["agent"]["obs"]["obs"])
    plain = gymnasium.make("CartPole-v1")
    want, _ = plain.reset(seed=3)
    assert obs.tobytes() == want.tobytes()
    assert step["agents"]["agent"]["reward"] == 1.0
    assert state["state"]["_np_random"]["bit_generator"] == "PCG64"
    assert state["state"]["state"]["dtype"] == "<f8", "CartPole's own `state` attribute"
    assert state["state"]["lockstep_skipped"] == {}
    assert bogus["ok"] is False and "bogus" in bogus["error"]
    assert close == {"id": 5, "ok": True}


def test_failure_to_start_is_a_handshake_with_ok_false():
    def broken():
        raise RuntimeError("no such env")

    code, lines = run(broken, [])
    assert code == 1
    assert len(lines) == 1
    hello = lines[0]
    assert {k: hello[k] for k in ("protocol", "ok", "error")} == {
        "protocol": wire.PROTOCOL,
        "ok": False,
        "error": "RuntimeError: no such env",
    }
    # The traceback travels in the handshake (shown once by lockstep, as lines).
    assert hello["traceback"].startswith("Traceback (most recent call last)")
    assert "RuntimeError: no such env" in hello["traceback"]


def test_exceptions_in_step_are_answered():
    def walker():
        return server.GymnasiumServed(testing.walker("raises"), "w", {})

    _, lines = run(
        walker,
        [{"id": 1, "op": "reset", "seed": 0}]
        + [{"id": i, "op": "step", "actions": {"agent": 0}} for i in (2, 3, 4)],
    )
    assert lines[2]["ok"] is True
    assert lines[3]["ok"] is False and "refusing step 2" in lines[3]["error"]
    assert "Traceback" in lines[3]["traceback"]
    assert lines[4]["ok"] is True


def test_global_rng_fixture_really_diverges():
    a, b = testing.walker("global_rng"), testing.walker("global_rng")
    a.reset(seed=1)
    b.reset(seed=1)
    assert (a.step(1)[0]["pos"] != b.step(1)[0]["pos"]).any()
    c, d = testing.walker(), testing.walker()
    c.reset(seed=1)
    d.reset(seed=1)
    assert (c.step(1)[0]["pos"] == d.step(1)[0]["pos"]).all()


def test_prints_in_the_env_do_not_corrupt_the_protocol():
    """A real child: the env prints to stdout every step; the protocol stream stays clean."""
    requests = [{"id": 1, "op": "reset", "seed": 0}, {"id": 2, "op": "step", "actions": {"agent": 0}}, {"id": 3, "op": "close"}]
    proc = subprocess.run(
        [sys.executable, "-m", "lockstep_adapter", "factory", "lockstep_adapter.testing:walker", "--kwargs", '{"bug": "chatty"}'],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        cwd=PYTHON_DIR,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 4 and all(m["ok"] for m in lines)
    assert "walker: chatty step 1" in proc.stderr


def test_pettingzoo_parallel_env():
    from mpe2 import simple_spread_v3

    def make():
        return server.ParallelServed(simple_spread_v3.parallel_env(), "mpe2.simple_spread_v3", {})

    _, lines = run(
        make,
        [{"id": 1, "op": "reset", "seed": 4}, {"id": 2, "op": "step", "actions": {"agent_0": 1, "agent_1": 2, "agent_2": 3}}],
    )
    hello, reset, step = lines
    assert [a["name"] for a in hello["agents"]] == ["agent_0", "agent_1", "agent_2"]
    assert sorted(step["agents"]) == ["agent_0", "agent_1", "agent_2"]
    assert isinstance(step["agents"]["agent_0"]["reward"], float)


def test_threaded_instances_answer_every_request_with_its_id():
    """lockstep/2 with threads: each instance on its own thread; a request queued behind a
    create runs after it; with every instance closed, the next create is still read."""
    walker = lambda: server.GymnasiumServed(testing.walker(), "walker", {})  # noqa: E731
    requests = [
        {"id": 1, "op": "upgrade", "protocol": "lockstep/2", "threads": True},
        {"id": 2, "op": "create"},
        {"instance": 0, "id": 3, "op": "reset", "seed": 5, "options": None},
        {"instance": 1, "id": 4, "op": "reset", "seed": 5, "options": None},
        {"instance": 0, "id": 5, "op": "close"},
        {"instance": 1, "id": 6, "op": "close"},
        {"id": 7, "op": "create"},
        {"instance": 2, "id": 8, "op": "reset", "seed": 5, "options": None},
        {"instance": 0, "id": 9, "op": "state"},
    ]
    code, lines = run(walker, requests)
    assert code == 0
    hello, answers = lines[0], {m["id"]: m for m in lines[1:]}
    assert hello["threads"] is True
    assert sorted(answers) == list(range(1, 10))
    assert answers[1]["threads"] is True
    assert (answers[2]["instance"], answers[7]["instance"]) == (1, 2)
    assert answers[3]["agents"] == answers[4]["agents"] == answers[8]["agents"]
    assert answers[9]["ok"] is False and "no instance 0" in answers[9]["error"]


def test_only_an_instance_created_with_thread_true_leaves_the_main_thread():
    """Issue 30 item 3: a thread-bound env (a process-global client bound to the thread that
    started it, as BrowserGym's Playwright) works on every instance of the main thread, the
    ones a plain create makes included; an instance created with ``"thread": true`` runs on a
    thread of its own, where that env raises in words."""
    testing._CLIENT = None
    from lockstep_adapter import drivers

    def bound():
        policy = drivers.PolicyDriver("click_policy", testing.click_policy)
        return server.GymnasiumServed(testing.thread_bound_clicker(), "bound", {}, driver=policy)

    requests = [
        {"id": 1, "op": "upgrade", "protocol": "lockstep/2", "threads": True},
        {"instance": 0, "id": 2, "op": "reset", "seed": 5, "options": None},
        {"id": 3, "op": "create"},
        {"instance": 1, "id": 4, "op": "reset", "seed": 5, "options": None},
        {"id": 5, "op": "create", "thread": True},
        {"instance": 2, "id": 6, "op": "reset", "seed": 5, "options": None},
    ]
    try:
        code, lines = run(bound, requests)
    finally:
        testing._CLIENT = None
    assert code == 0
    answers = {m["id"]: m for m in lines[1:]}
    assert answers[2]["ok"] is True and answers[4]["ok"] is True
    assert (answers[3]["thread"], answers[5]["thread"]) == (False, True)
    assert answers[4]["agents"] == answers[2]["agents"]
    assert answers[6]["ok"] is False
    assert answers[6]["error"].startswith("RuntimeError: no running event loop")


def test_without_threads_lockstep2_is_served_in_order_on_one_thread():
    requests = [
        {"id": 1, "op": "upgrade", "protocol": "lockstep/2"},
        {"instance": 0, "id": 2, "op": "reset", "seed": 1, "options": None},
        {"instance": 0, "id": 3, "op": "step", "actions": {"agent": 0}},
    ]
    code, lines = run(cartpole, requests)
    assert code == 0
    assert [m["id"] for m in lines[1:]] == [1, 2, 3]
    assert lines[1]["threads"] is False


def test_reset_seeds_no_space_unless_asked_and_takes_no_seed():
    """Issue 26 item 3: lockstep samples its own actions, so the adapter leaves the env's spaces
    as a training loop does (unseeded); ``seed_spaces`` opts in. A reset without a seed is the
    env's own ``reset()``, the one a training loop calls after its first episode."""
    requests = [
        {"id": 1, "op": "reset", "seed": 3, "options": None},
        {"id": 2, "op": "state"},
        {"id": 3, "op": "reset", "seed": None, "options": None},
    ]
    code, lines = run(cartpole, requests)
    assert code == 0
    _, seeded, state, unseeded = lines
    assert state["state"]["action_space_rng"] == {"agent": None}
    assert unseeded["ok"] is True
    assert unseeded["agents"]["agent"]["obs"] != seeded["agents"]["agent"]["obs"]

    def seeding():
        served = cartpole()
        served.seed_spaces = True
        return served

    code, lines = run(seeding, requests[:2])
    assert lines[2]["state"]["action_space_rng"]["agent"]["bit_generator"] == "PCG64"


def test_seed_spaces_flag_is_in_the_handshake_config():
    from lockstep_adapter import __main__ as cli

    args = cli.parse_args(["gymnasium", "CartPole-v1", "--seed-spaces"])
    served = cli.make_served(args)
    assert served.seed_spaces is True
    assert served.handshake()["config"]["seed_spaces"] is True
    plain = cli.make_served(cli.parse_args(["gymnasium", "CartPole-v1"]))
    assert plain.seed_spaces is False and "seed_spaces" not in plain.handshake()["config"]


def walker_served(bug):
    def make():
        return server.GymnasiumServed(testing.walker(bug), "walker", {"bug": bug})

    return make


def test_the_tracer_ops_name_the_line_and_the_effects(tmp_path, monkeypatch):
    """Issue 27: the handshake offers the tracer; ``trace`` switches it on, ``sources`` drains
    the reads with their env line, ``effects`` lists what the process touched (when lockstep
    asked it to record them: the variable it sets for a trial's own child)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(server.EFFECTS_VAR, "1")
    code, lines = run(
        walker_served("wall_clock"),
        [
            {"id": 1, "op": "trace", "on": True},
            {"id": 2, "op": "reset", "seed": 3, "options": None},
            {"id": 3, "op": "step", "actions": {"agent": 1}},
            {"id": 4, "op": "sources"},
            {"id": 5, "op": "sources"},
            {"id": 6, "op": "trace", "on": "yes"},
            {"id": 7, "op": "effects"},
        ],
    )
    assert code == 0
    assert lines[0]["tracer"] is True
    assert lines[1] == {"id": 1, "ok": True}
    reads = lines[4]["sources"]
    clock = [r for r in reads if r["kind"] == "clock"]
    assert clock and clock[0]["source"] == "time.time()" and clock[0]["step"] == 1, reads
    assert clock[0]["file"].endswith("testing.py") and clock[0]["function"] == "step"
    assert lines[5]["sources"] == [], "drained"
    assert lines[6]["ok"] is False and "trace needs" in lines[6]["error"]
    assert lines[7]["ok"] is True and isinstance(lines[7]["effects"], list)


def test_effects_name_a_file_written_during_reset(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(server.EFFECTS_VAR, "1")
    code, lines = run(
        walker_served("home_cache"),
        [{"id": 1, "op": "reset", "seed": 3, "options": None}, {"id": 2, "op": "effects"}],
    )
    assert code == 0
    writes = [e for e in lines[2]["effects"] if e["kind"] == "file_write"]
    assert any(e["path"] == str(tmp_path / "lockstep-walker" / "layout.txt") and e["phase"] == "reset" for e in writes), lines[2]


def test_effects_are_not_recorded_unless_asked(subprocess_env=None):
    """The audit hook costs every audited event (each id()): a process lockstep did not ask
    installs none, and says so with ``"effects": null``."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    env.pop(server.EFFECTS_VAR, None)
    code = (
        "import io, json, sys\n"
        "from lockstep_adapter import server, testing\n"
        "inp = io.BytesIO(b'{\"id\":1,\"op\":\"effects\"}\\n')\n"
        "out = io.BytesIO()\n"
        "server.serve(lambda: server.GymnasiumServed(testing.walker(), 'w', {}), out=out, inp=inp)\n"
        "print(out.getvalue().decode().splitlines()[1])\n"
        "print(server.effects_recorded(), hasattr(sys, 'audit') and len(getattr(sys, '_lockstep_hooks', [])))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=120, text=True)
    lines = out.stdout.splitlines()
    assert json.loads(lines[0]) == {"id": 1, "ok": True, "effects": None}, out
    assert lines[1].startswith("False"), out


def test_provenance_names_the_interpreter_and_the_imported_distributions():
    """Issue 30 item 7: what ran the env, for the report."""
    code, lines = run(walker_served(None), [{"id": 1, "op": "provenance"}])
    assert code == 0 and lines[0]["provenance"] is True
    p = lines[1]["provenance"]
    assert p["python"] == ".".join(map(str, sys.version_info[:3])) and p["implementation"] == sys.implementation.name
    assert p["packages"]["numpy"] == __import__("numpy").__version__
    assert p["packages"]["gymnasium"] == gymnasium.__version__

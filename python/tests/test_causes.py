"""The cause of a nondeterminism: the env line that read a source (SourceTracer), and what
the env touched outside itself (the effects recorder)."""

import contextlib
import http.server
import json
import os
import random
import shutil
import socket
import sqlite3
import sys
import threading

import pytest

import cause_envs
from cause_envs import line_of
from lockstep_adapter import causes, testing
from lockstep_adapter.causes import SourceTracer, effects_recorder


def traced(env, steps=1, seed=0):
    """The events of ``reset(seed)`` and ``steps`` steps of ``env``, traced."""
    tracer = SourceTracer(env)
    tracer.call("reset", env.reset, seed=seed)
    for _ in range(steps):
        tracer.call("step", env.step, 0)
    events = tracer.drain()
    json.dumps(events)  # JSON-able, as the protocol sends them
    return events


def only(events):
    assert len(events) == 1, events
    return events[0]


def in_cause_envs(event):
    return event["file"] is not None and event["file"].endswith(os.path.join("tests", "cause_envs.py"))


SOURCES = [
    # env, marker, kind, source, via
    ("GlobalRandom", "global-random", "shared_rng", "random.random()", None),
    ("HiddenInstance", "hidden-instance", "shared_rng", "random.random()", None),
    ("NumpyGlobal", "numpy-global", "shared_rng", "np.random", None),
    ("NumpyUnseeded", "numpy-unseeded", "unseeded_rng", "numpy.random.SeedSequence()", None),
    ("RandomUnseeded", "random-unseeded", "unseeded_rng", "random.Random()", None),
    ("SpaceUnseeded", "space-unseeded", "unseeded_space", "Discrete.seed(None)", "gymnasium.spaces.discrete.Discrete.sample"),
    ("Clock", "clock", "clock", "time.time()", None),
    ("Now", "now", "clock", "datetime.datetime.now()", None),
    ("Pid", "pid", "process_identity", "os.getpid()", None),
    ("Address", "address", "process_identity", "id()", None),
    ("Uuid1", "uuid1", "process_identity", "uuid.uuid1()", None),
    ("Urandom", "urandom", "entropy", "os.urandom()", None),
    ("Token", "token", "entropy", "os.urandom()", "secrets.token_hex"),
    ("Uuid4", "uuid4", "entropy", "os.urandom()", "uuid.uuid4"),
]


@pytest.mark.parametrize("name, marker, kind, source, via", SOURCES, ids=[s[1] for s in SOURCES])
def test_each_source_is_named_with_the_env_line_that_read_it(name, marker, kind, source, via):
    event = only(traced(getattr(cause_envs, name)()))
    assert (event["kind"], event["source"], event["via"]) == (kind, source, via)
    assert in_cause_envs(event) and os.path.isabs(event["file"])
    assert event["line"] == line_of(marker)
    assert event["function"] == "read"
    assert (event["episode"], event["step"], event["count"]) == (0, 1, 1)
    assert isinstance(event["what"], str) and event["what"]


def test_a_shared_rng_says_what_it_is():
    assert only(traced(cause_envs.GlobalRandom()))["what"] == "the process-global RNG, which every instance in the process shares"
    assert only(traced(cause_envs.NumpyGlobal()))["what"] == "numpy's global RNG (np.random), which every instance in the process shares"


@pytest.mark.parametrize("name, marker, source, via", [("Listing", "listdir", "os.listdir()", None), ("Globbing", "glob", "os.scandir()", "glob.glob")])
def test_a_directory_listing_is_directory_order(tmp_path, name, marker, source, via):
    (tmp_path / "a").write_text("")
    event = only(traced(getattr(cause_envs, name)(directory=str(tmp_path))))
    assert (event["kind"], event["source"], event["via"], event["line"]) == ("directory_order", source, via, line_of(marker))


def test_a_source_imported_by_name_is_caught_by_identity():
    """``from time import time as wall_time``: the same function object, so the same source."""
    event = only(traced(cause_envs.ImportedClock()))
    assert (event["kind"], event["source"], event["line"]) == ("clock", "time.time()", line_of("imported-clock"))


def test_a_library_frame_is_skipped_to_the_env_line_that_called_it():
    events = traced(cause_envs.RandomChoice())
    event = only(events)
    assert (event["kind"], event["source"], event["via"]) == ("shared_rng", "random.getrandbits()", "random.choice")
    assert in_cause_envs(event) and event["line"] == line_of("random-choice")


def test_an_honest_env_gives_no_events():
    assert traced(cause_envs.Honest(), steps=5) == []
    assert traced(testing.walker(), steps=5) == []


def test_seeding_a_shared_rng_with_an_integer_is_not_a_read():
    assert traced(cause_envs.ReseedsRandom(), steps=2) == []
    assert traced(cause_envs.NumpyReseed(), steps=2) == []


def test_numpy_draws_are_seen_even_when_they_use_the_cached_gaussian():
    """Legacy ``normal()`` draws two Gaussians and keeps one: the second call advances no
    MT19937 state, only the cache, and must be seen too."""
    events = traced(cause_envs.NumpyGlobal(), steps=4)
    assert [(e["step"], e["line"]) for e in events] == [(s, line_of("numpy-global")) for s in (1, 2, 3, 4)]


def test_a_source_read_by_a_library_for_itself_is_not_the_envs():
    """``copy.deepcopy`` calls ``id()``: only ``id`` straight from env code counts."""
    assert traced(cause_envs.DeepCopy()) == []


def test_reads_with_no_env_frame_are_dropped_as_library_work():
    tracer = SourceTracer(cause_envs.Env())
    assert tracer.call("step", random.random) < 1
    assert tracer.drain() == []


def test_a_lazy_import_is_not_a_source_nor_an_effect(tmp_path, monkeypatch):
    (tmp_path / "lazy_cause_module.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_cause_module", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    env = cause_envs.LazyImport(module="lazy_cause_module")
    recorder = effects_recorder()
    mark = recorder.mark()
    tracer = SourceTracer(env)
    with recorder.during("step"):
        assert tracer.call("step", env.step, 0)[0] == 3
    assert tracer.drain() == []
    assert recorder.since(mark) == []
    assert (tmp_path / "__pycache__").is_dir()  # it did write its bytecode


def test_reads_on_one_line_are_one_event_with_their_count():
    event = only(traced(cause_envs.GlobalRandomThrice()))
    assert (event["line"], event["count"]) == (line_of("global-random-thrice"), 3)


def test_episodes_and_steps_are_counted_by_phase_and_drain_forgets():
    env = cause_envs.GlobalRandom()
    tracer = SourceTracer(env)
    for phase in ("reset", "step", "step", "reset", "step"):
        if phase == "reset":
            tracer.call(phase, env.reset, seed=0)
        else:
            tracer.call(phase, env.step, 0)
    assert [(e["episode"], e["step"]) for e in tracer.drain()] == [(0, 1), (0, 2), (1, 1)]
    assert tracer.drain() == []
    with pytest.raises(ValueError):
        tracer.call("make", env.step, 0)


def test_a_class_level_cache_filled_in_reset_is_shared_state():
    cause_envs.FirstSeedWins._levels.clear()
    event = only(traced(cause_envs.FirstSeedWins(), seed=7))
    assert (event["kind"], event["source"], event["step"]) == ("shared_state", "FirstSeedWins._levels", 0)
    assert (event["before"], event["after"]) == ({}, {"layout": [7, 1]})
    assert in_cause_envs(event) and event["line"] == _class_line("FirstSeedWins")
    assert (event["function"], event["via"], event["count"]) == (None, None, 1)
    # The next instance finds it filled: nothing changes, nothing is reported.
    assert traced(cause_envs.FirstSeedWins(), seed=8) == []


def _class_line(name):
    with open(cause_envs.__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.startswith(f"class {name}("))


def test_a_module_global_a_step_changes_is_shared_state():
    before = cause_envs.STEPS
    events = traced(cause_envs.CountsSteps(), steps=2)
    assert [(e["source"], e["step"], e["before"], e["after"], e["line"]) for e in events] == [
        ("cause_envs.STEPS", 1, before, before + 1, None),
        ("cause_envs.STEPS", 2, before + 1, before + 2, None),
    ]
    assert all(in_cause_envs(e) for e in events)


def test_the_walker_fixtures_are_env_code():
    """lockstep_adapter/testing.py lives in lockstep's package but is env code."""
    for bug, kind, source in [
        ("global_rng", "shared_rng", "np.random"),
        ("wall_clock", "clock", "time.time()"),
        ("process_random", "shared_rng", "random.random()"),
        ("space_sample", "unseeded_space", "Discrete.seed(None)"),
    ]:
        events = traced(testing.walker(bug=bug))
        event = only([e for e in events if e["step"] == 1])
        assert (event["kind"], event["source"]) == (kind, source), bug
        assert event["file"] == os.path.abspath(testing.__file__), bug
    Walker = testing.Walker
    saved = dict(Walker._levels)
    Walker._levels.clear()
    try:
        event = only(traced(testing.walker(bug="first_seed_wins"), steps=0))
        assert (event["kind"], event["source"], event["before"]) == ("shared_state", "Walker._levels", {})
        assert list(event["after"]) == ["layout"]
    finally:
        Walker._levels.clear()
        Walker._levels.update(saved)


def test_gymnasiums_lazily_seeded_np_random_is_unseeded_via_the_env_property():
    events = traced(cause_envs.LazyNpRandom(), steps=3, seed=None)
    event = only(events)
    assert (event["step"], event["kind"], event["via"]) == (1, "unseeded_rng", "gymnasium.core.Env.np_random")
    assert event["line"] == line_of("lazy-np-random") and event["function"] == "step"


def test_a_vector_envs_sub_env_modules_are_its_own():
    env = testing.walker_vector(bug="first_seed_wins")
    saved = dict(testing.Walker._levels)
    testing.Walker._levels.clear()
    try:
        event = only(traced(env, steps=0))
    finally:
        testing.Walker._levels.clear()
        testing.Walker._levels.update(saved)
    assert (event["kind"], event["source"], event["file"]) == ("shared_state", "Walker._levels", os.path.abspath(testing.__file__))


def test_an_unseeded_reset_of_the_walker_names_its_seed_source():
    env = testing.walker(bug="pid_seeded")
    tracer = SourceTracer(env)
    tracer.call("reset", env.reset, seed=0)
    tracer.call("reset", env.reset)
    event = only(tracer.drain())
    assert (event["episode"], event["step"], event["kind"], event["source"], event["function"]) == (1, 0, "process_identity", "os.getpid()", "reset")


def test_the_previous_profile_and_trace_functions_are_restored():
    def profiler(frame, event, arg):
        return None

    env = cause_envs.GlobalRandom()
    tracer = SourceTracer(env)
    previous_trace = sys.gettrace()
    sys.setprofile(profiler)
    try:
        tracer.call("step", env.step, 0)
        assert sys.getprofile() is profiler
        with pytest.raises(ZeroDivisionError):
            tracer.call("step", lambda: 1 / 0)
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    assert sys.gettrace() is previous_trace
    assert len(tracer.drain()) == 1


def test_two_tracers_on_two_threads_do_not_mix():
    noisy, honest = cause_envs.GlobalRandom(), cause_envs.Env()
    tracers = {"noisy": SourceTracer(noisy), "honest": SourceTracer(honest)}
    start = threading.Barrier(2)
    errors = []

    def run(name, env):
        start.wait()
        try:
            for _ in range(300):
                tracers[name].call("step", env.step, 0)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=item) for item in (("noisy", noisy), ("honest", honest))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert tracers["honest"].drain() == []
    events = tracers["noisy"].drain()
    assert len(events) == 300 and {e["line"] for e in events} == {line_of("global-random")}


def test_the_outside_world_is_a_source_while_traced(tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = cause_envs.HomeCache()
    tracer = SourceTracer(env)
    tracer.call("reset", env.reset)
    tracer.call("step", env.step, 0)
    events = [e for e in tracer.drain() if e["kind"] == "outside_world"]
    assert [(e["step"], e["source"], e["line"]) for e in events] == [
        (0, "directory_create: ~/.cache", line_of("home-write") - 1),
        (0, "directory_create: ~/.cache/walker", line_of("home-write") - 1),
        (0, "file_write: ~/.cache/walker/layout.json", line_of("home-write")),
        (1, "file_read: ~/.cache/walker/layout.json", line_of("home-read")),
    ]


# --- Effects ---------------------------------------------------------------------------------


@pytest.fixture
def recorder():
    rec = effects_recorder()
    rec.mark()
    return rec


def effects(recorder, mark, kind=None):
    return [e for e in recorder.since(mark) if kind is None or e["kind"] == kind]


def test_the_recorder_is_one_for_the_process():
    assert effects_recorder() is effects_recorder()


def test_a_cache_written_under_home_is_a_file_write_at_the_env_line(recorder, tmp_path, monkeypatch):
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = cause_envs.HomeCache()
    mark = recorder.mark()
    with recorder.during("reset"):
        env.reset()
    with recorder.during("step"):
        env.step(0)
    path = str(tmp_path / "home" / ".cache" / "walker" / "layout.json")
    got = [(e["phase"], e["kind"], e["target"]) for e in recorder.since(mark)]
    assert got == [
        ("reset", "directory_create", "~/.cache"),
        ("reset", "directory_create", "~/.cache/walker"),
        ("reset", "file_write", "~/.cache/walker/layout.json"),
        ("step", "file_read", "~/.cache/walker/layout.json"),
    ]
    json.dumps(recorder.since(mark))
    write = effects(recorder, mark, "file_write")[0]
    assert write == {
        "phase": "reset",
        "kind": "file_write",
        "target": "~/.cache/walker/layout.json",
        "path": path,
        "file": os.path.abspath(cause_envs.__file__),
        "line": line_of("home-write"),
        "function": "reset",
        "count": 1,
    }
    # A second reset: the directories exist (makedirs(exist_ok=True) makes nothing).
    mark = recorder.mark()
    with recorder.during("reset"):
        env.reset()
    assert [e["kind"] for e in recorder.since(mark)] == ["file_write"]


def _installation_file():
    """A file of the installation that is not Python code."""
    for root, _, files in os.walk(sys.prefix):
        for name in sorted(files):
            if not name.endswith(causes._CODE_SUFFIXES):
                return os.path.join(root, name)
    pytest.skip("no data file under sys.prefix")


def test_imports_and_the_installation_are_not_effects(recorder, tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("x")
    mark = recorder.mark()
    with recorder.during("step"):
        cause_envs.ReadsFiles(paths=[os.__file__, _installation_file(), "/proc/self/status", str(data)]).step(0)
    (effect,) = recorder.since(mark)
    assert (effect["kind"], effect["path"]) == ("file_read", str(data))


def test_a_sqlite_database_file_is_sqlite_and_memory_is_not(recorder, tmp_path):
    path = tmp_path / "state.db"
    mark = recorder.mark()
    with recorder.during("step"):
        cause_envs.Database(path=str(path)).step(0)
    (effect,) = recorder.since(mark)
    assert (effect["kind"], effect["path"], effect["line"]) == ("sqlite", str(path), line_of("sqlite"))


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def test_an_http_get_is_http_and_not_also_a_socket(recorder, monkeypatch):
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "*")  # straight to the local server, whatever the machine's proxy
    server = http.server.HTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/layout"
    try:
        mark = recorder.mark()
        with recorder.during("step"):
            assert cause_envs.Fetches(url=url).step(0)[0] == b"ok"
    finally:
        thread.join(10)
        server.server_close()
    (effect,) = recorder.since(mark)
    # The endpoint, not the request's path and query: one service, however many requests.
    endpoint = f"http://127.0.0.1:{server.server_port}"
    assert (effect["kind"], effect["target"], effect["line"]) == ("http", endpoint, line_of("http"))


def test_two_hosts_on_one_port_are_two_effects_and_a_later_raw_connect_is_seen(recorder):
    """The HTTP connect's own socket is left out, not every later connect to that port."""
    frame = sys._getframe()
    with recorder.during("step"):
        mark = recorder.mark()
        # The events, as the interpreter raises them for two requests and a raw connect.
        causes._audit("http.client.connect", (object(), "127.0.0.1", 9))
        causes._audit("socket.connect", (None, ("127.0.0.1", 9)))
        causes._audit("http.client.connect", (object(), "127.0.0.2", 9))
        causes._audit("socket.connect", (None, ("127.0.0.2", 9)))
        causes._audit("socket.connect", (None, ("10.0.0.1", 9)))
    del frame
    targets = [(e["kind"], e["target"]) for e in recorder.since(mark)]
    assert targets == [("http", "http://127.0.0.1:9"), ("http", "http://127.0.0.2:9"), ("socket", "10.0.0.1:9")], targets


def test_a_file_name_that_is_not_utf8_is_carried_as_escapes(recorder, tmp_path):
    name = os.fsencode(str(tmp_path)) + b"/x\xff.txt"
    mark = recorder.mark()
    with recorder.during("reset"):
        with open(name, "w") as f:
            f.write("x")
    (effect,) = [e for e in recorder.since(mark) if e["kind"] == "file_write"]
    assert effect["path"].endswith("/x\\xff.txt"), effect
    json.dumps(effect)  # no lone surrogate: the reply is JSON


def test_a_raw_socket_connect_is_a_socket(recorder):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        mark = recorder.mark()
        with recorder.during("step"):
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
    finally:
        listener.close()
    (effect,) = recorder.since(mark)
    assert (effect["kind"], effect["target"]) == ("socket", f"127.0.0.1:{port}")


def test_a_subprocess_is_subprocess(recorder):
    mark = recorder.mark()
    with recorder.during("step"):
        cause_envs.RunsTrue().step(0)
    (effect,) = recorder.since(mark)
    assert (effect["kind"], effect["target"], effect["line"]) == ("subprocess", "true", line_of("subprocess"))


def test_renames_and_deletions_are_effects(recorder, tmp_path):
    a, b, tree = tmp_path / "a", tmp_path / "b", tmp_path / "tree"
    a.write_text("x")
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f").write_text("x")
    mark = recorder.mark()
    with recorder.during("step"):
        os.replace(a, b)
        os.remove(b)
        with contextlib.suppress(FileNotFoundError):
            os.remove(b)  # nothing there: nothing deleted
        shutil.rmtree(tree)
    got = [(e["kind"], e["path"]) for e in recorder.since(mark)]
    assert got == [("file_rename", str(a)), ("file_delete", str(b)), ("file_delete", str(tree))]


def test_repeats_are_counted_and_marks_separate(recorder, tmp_path):
    path = tmp_path / "log.txt"
    first = recorder.mark()
    with recorder.during("step"):
        for _ in range(3):
            with open(path, "a") as f:
                f.write("x")
    second = recorder.mark()
    with recorder.during("step"):
        open(path).close()
    assert [(e["kind"], e["count"]) for e in recorder.since(first)] == [("file_write", 3), ("file_read", 1)]
    assert [(e["kind"], e["count"]) for e in recorder.since(second)] == [("file_read", 1)]


def test_the_oldest_effects_are_forgotten_past_the_cap_and_marks_stay_valid(recorder, tmp_path, monkeypatch):
    monkeypatch.setattr(causes, "EFFECTS_MAX", 8)
    # The list is the process's: start it empty (positions stay absolute), so that what the
    # tests before this one recorded does not decide when the cap is reached.
    with recorder._lock:
        recorder._dropped += len(recorder._records)
        recorder._records.clear()
    mark = recorder.mark()
    with recorder.during("step"):
        for i in range(6):
            (tmp_path / f"f{i}").write_text("x")
    late = recorder.mark()
    with recorder.during("step"):
        for i in range(6, 12):
            (tmp_path / f"f{i}").write_text("x")
    names = [os.path.basename(e["path"]) for e in recorder.since(late)]
    assert names == [f"f{i}" for i in range(6, 12)]
    kept = [os.path.basename(e["path"]) for e in recorder.since(mark)]
    assert kept[-6:] == names and len(kept) < 12


def test_nothing_is_recorded_outside_a_phase(recorder, tmp_path):
    """The hook's cheap path: with no phase active on the thread it records nothing."""
    mark = recorder.mark()
    for i in range(20):
        (tmp_path / f"f{i}").write_text("x")
        (tmp_path / f"f{i}").read_text()
    sqlite3.connect(str(tmp_path / "x.db")).close()
    assert recorder.since(mark) == []


def test_phases_are_per_thread_and_nest(recorder, tmp_path):
    mark = recorder.mark()

    def elsewhere():
        (tmp_path / "other").write_text("x")

    with recorder.during("make"):
        (tmp_path / "made").write_text("x")
        with recorder.during("reset"):
            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
            (tmp_path / "reset").write_text("x")
        (tmp_path / "made2").write_text("x")
    got = [(e["phase"], os.path.basename(e["path"])) for e in recorder.since(mark)]
    assert got == [("make", "made"), ("reset", "reset"), ("make", "made2")]
    with pytest.raises(ValueError):
        recorder.during("close")


def test_an_effect_with_no_env_frame_below_the_phase_has_no_site(recorder, tmp_path):
    """Entered and done by code that is not env code (here code compiled as "<lockstep>"):
    the walk stops at the frame that entered the phase."""
    path = str(tmp_path / "w")
    code = compile("with recorder.during('step'):\n    open(path, 'w').close()\n", "<lockstep>", "exec")
    mark = recorder.mark()
    exec(code, {"recorder": recorder, "path": path})
    (effect,) = recorder.since(mark)
    assert (effect["kind"], effect["file"], effect["line"], effect["function"]) == ("file_write", None, None, None)


def test_an_effect_of_the_code_that_entered_the_phase_is_its_own(recorder, tmp_path):
    mark = recorder.mark()
    with recorder.during("step"):
        (tmp_path / "w").write_text("x")
    (effect,) = recorder.since(mark)
    assert effect["file"] == os.path.abspath(__file__)
    assert effect["function"] == "test_an_effect_of_the_code_that_entered_the_phase_is_its_own"


def test_paths_are_shown_under_their_longest_prefix(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.chdir(work)
    assert causes.display_path(str(home / ".cache" / "x")) == "~/.cache/x"
    assert causes.display_path(str(tmp_path / "scratch")) == "$TMPDIR/scratch"
    assert causes.display_path(str(work / "out.json")) == "./out.json"
    assert causes.display_path(str(home)) == "~"
    assert causes.display_path("/etc/hosts") == "/etc/hosts"


def test_an_installed_librarys_frame_is_not_the_envs_line(tmp_path, monkeypatch):
    """Review of issue 27: a library in site-packages (pandas' read_csv opening the file) was
    taken for env code, and the line named was the library's. With the env's own roots known,
    the line is the env's call."""
    site_dir = tmp_path / "site-packages"
    (site_dir / "readerlib").mkdir(parents=True)
    (site_dir / "readerlib" / "__init__.py").write_text("def read(path):\n    with open(path) as f:\n        return f.read()\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "reader_env.py").write_text(
        "import readerlib\n"
        "class ReaderEnv:\n"
        "    def __init__(self, path):\n"
        "        self.path = path\n"
        "    def reset(self):\n"
        "        return readerlib.read(self.path)  # the env's line\n"
    )
    (tmp_path / "data.txt").write_text("x")
    monkeypatch.syspath_prepend(str(site_dir))
    monkeypatch.syspath_prepend(str(project))
    lib = causes._lib()
    monkeypatch.setattr(lib, "site_dirs", lib.site_dirs + [str(site_dir)])
    monkeypatch.setattr(lib, "env_roots", set())
    monkeypatch.setattr(causes, "_env_files", {})
    import reader_env

    env = reader_env.ReaderEnv(str(tmp_path / "data.txt"))
    causes.add_env_roots(env)
    recorder = effects_recorder()
    mark = recorder.mark()
    with recorder.during("reset"):
        env.reset()
    (read,) = [e for e in recorder.since(mark) if e["kind"] == "file_read"]
    assert read["file"] == str(project / "reader_env.py") and read["line"] == 6, read

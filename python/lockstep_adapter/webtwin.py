"""webtask's Python twin: the seed-000 experiment as a Gymnasium env on three real layers.

Serve it with ``python -m lockstep_adapter factory lockstep_adapter.webtwin:make`` (complete
reset) or ``--kwargs '{"reset": "partial"}'`` (the fault: the reset keeps the cache). The
layers are touched by plain standard-library calls, so an audit hook
(:func:`sys.addaudithook`) sees every one of them:

========= ============================================= ======================================
layer     what                                          touched by
========= ============================================= ======================================
server    an HTTP server in a separate process          ``http.client`` (``http.client.connect``,
          (``python -m lockstep_adapter.webtwin          ``socket.connect``)
          serve``), counting visits per seed in memory
database  ``DATA/app.db``, table ``visits(seed INTEGER  ``sqlite3.connect`` (``sqlite3.connect``)
          PRIMARY KEY, count INTEGER)``
cache     ``DATA/cache/choice.json``: the cached        ``open`` (``open``), ``os.remove``
          choice ``{"choice": A}``                      (``os.remove``)
========= ============================================= ======================================

The server answers ``GET /visit?seed=S`` (one more visit: ``{"seed": S, "visits": n}``),
``POST /reset`` (clears every count: ``{"ok": true}``) and ``GET /state`` (``{"visits": {"S":
n}}``). It prints its port on its first stdout line, binds 127.0.0.1 on a free port and exits
when its standard input closes, so it never outlives the process that started it (even one
killed with SIGKILL or ended with ``os._exit``); :meth:`WebTwin.close`, a
:func:`weakref.finalize` and interpreter exit terminate it sooner.

An episode: ``reset(seed=S)`` draws the target (0, 1 or 2) from ``self.np_random``; the
observation is ``[target, cached choice or -1, visits of S]``. The first step uses the cached
choice when there is one instead of the action (the contamination), else caches the action;
every step visits the server and adds the visit to the database; the reward is 1.0 when the
choice is the target; the episode ends after 3 steps.

Resets: ``"complete"`` deletes the cache file, empties the table and POSTs ``/reset``;
``"partial"`` does the same but keeps the cache file, so the second episode of a seed on one
instance starts with the first episode's choice (``obs[1]``, attribute ``cached``) and its
first step plays it.

Where the layers live is wiring, not state: the data directory and the server's URL (a free
port, new for every instance) are kept in ``lockstep_data`` and ``lockstep_server_url``,
attributes the adapter reads as its own hooks, not as the starting state (docs/protocol.md);
the server's ``Popen`` is kept in the module-level :data:`_SERVERS`, keyed by that URL. Every
other attribute is plain JSON-readable data. ``data`` given: the layers are ``data/app.db`` and
``data/cache/choice.json``, shared by every instance given that directory. ``data`` omitted:
each instance gets a private directory below ``$XDG_CACHE_HOME/lockstep-webtwin`` (default
``~/.cache``), removed when it closes, so instances created together (interleaved, on parallel
threads, as lockstep's checks create them) do not read each other's cached choice.
"""

import http.client
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import weakref

import gymnasium
import numpy as np
from gymnasium import spaces

RESETS = ("complete", "partial")
STEPS = 3
CHOICES = 3
TIMEOUT = 10.0

#: The servers this process started: URL -> (Popen, the pid of the process that started it).
_SERVERS = {}
_SERVERS_LOCK = threading.Lock()

#: id(env) -> its weakref.finalize (server and private directory), outside the env's attributes.
_FINALIZERS = {}


def default_root():
    """``$XDG_CACHE_HOME/lockstep-webtwin`` (``~/.cache/lockstep-webtwin`` when unset)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "lockstep-webtwin")


# --- the server process -------------------------------------------------------------------


def _package_parent():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_server():
    """Starts ``python -m lockstep_adapter.webtwin serve``; returns its URL
    (``http://127.0.0.1:PORT``), registered in :data:`_SERVERS`."""
    env = dict(os.environ)
    parent = _package_parent()
    env["PYTHONPATH"] = parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockstep_adapter.webtwin", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        close_fds=True,
    )
    line = proc.stdout.readline()
    try:
        port = int(line.decode("ascii").strip())
    except ValueError:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"webtwin: the server did not print its port (got {line!r}, exit status {proc.returncode})") from None
    proc.stdout.close()
    url = f"http://127.0.0.1:{port}"
    with _SERVERS_LOCK:
        _SERVERS[url] = (proc, os.getpid())
    return url


def stop_server(url):
    """Terminates the server at ``url`` if this process started it (a forked copy of that
    process leaves it alone); waits for it to end."""
    with _SERVERS_LOCK:
        entry = _SERVERS.get(url)
        if entry is None or entry[1] != os.getpid():
            return
        del _SERVERS[url]
    proc = entry[0]
    try:
        proc.stdin.close()
    except OSError:
        pass
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_pid(url):
    """The pid of the server this process started at ``url``, or ``None``."""
    entry = _SERVERS.get(url)
    return None if entry is None else entry[0].pid


def serve(out=None, inp=None):
    """The server: binds 127.0.0.1 on a free port, prints the port, serves until its standard
    input closes."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    out = out if out is not None else sys.stdout
    inp = inp if inp is not None else sys.stdin.buffer
    counts = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's signature
            pass

        def _send(self, status, body):
            data = json.dumps(body, sort_keys=True).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - http.server's name
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/visit":
                query = urllib.parse.parse_qs(url.query)
                try:
                    seed = int(query["seed"][0])
                except (KeyError, ValueError):
                    return self._send(400, {"error": "expected /visit?seed=INTEGER"})
                with lock:
                    counts[seed] = counts.get(seed, 0) + 1
                    n = counts[seed]
                return self._send(200, {"seed": seed, "visits": n})
            if url.path == "/state":
                with lock:
                    visits = {str(s): n for s, n in sorted(counts.items())}
                return self._send(200, {"visits": visits})
            return self._send(404, {"error": f"no page {url.path}"})

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if urllib.parse.urlsplit(self.path).path == "/reset":
                with lock:
                    counts.clear()
                return self._send(200, {"ok": True})
            return self._send(404, {"error": f"no page {self.path}"})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True

    def watch_stdin():
        # End of input: the process that started this server has closed the pipe or died.
        while inp.read(1 << 12):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    out.write(f"{httpd.server_address[1]}\n")
    out.flush()
    httpd.serve_forever()


def _request(url, method, path):
    """One request to the server (``http.client``, no proxy): the decoded JSON body."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)
    try:
        conn.request(method, path, body=b"" if method == "POST" else None)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"webtwin: {method} {url}{path}: status {resp.status}: {body[:200]!r}")
        return json.loads(body)
    finally:
        conn.close()


def server_state(url):
    """``GET /state``: ``{"visits": {"SEED": n}}``."""
    return _request(url, "GET", "/state")


# --- the env ------------------------------------------------------------------------------


def _cleanup(key, url, data, pid):
    """The finalizer of a :class:`WebTwin`: its server, and its private data directory."""
    _FINALIZERS.pop(key, None)
    if url is not None:
        stop_server(url)
    if data is not None and pid == os.getpid():
        shutil.rmtree(data, ignore_errors=True)


class WebTwin(gymnasium.Env):
    """The seed-000 task on a real server process, SQLite file and cache file."""

    metadata = {"render_modes": []}

    def __init__(self, data=None, reset="complete", server_url=None):
        if reset not in RESETS:
            raise ValueError(f"unknown reset {reset!r} (known: {', '.join(RESETS)})")
        self.reset_mode = reset
        private = None
        if data is None:
            root = default_root()
            os.makedirs(root, exist_ok=True)
            data = private = tempfile.mkdtemp(prefix="env-", dir=root)
        data = os.path.abspath(data)
        os.makedirs(os.path.join(data, "cache"), exist_ok=True)
        self.lockstep_data = data
        owned = server_url is None
        try:
            self._create_table()
            self.lockstep_server_url = start_server() if owned else server_url.rstrip("/")
        except BaseException:
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
            raise
        self.observation_space = spaces.Box(-1, 2**31 - 1, shape=(3,), dtype=np.int64)
        self.action_space = spaces.Discrete(CHOICES)
        # The episode: plain data, the starting state lockstep reads.
        self.episode_seed = None
        self.target = None
        self.cached = None
        self.choice = None
        self.visits = 0
        self.t = 0
        # The finalizer (server and private directory) is kept outside the env's attributes;
        # it also runs at interpreter exit.
        key = id(self)
        _FINALIZERS[key] = weakref.finalize(
            self, _cleanup, key, self.lockstep_server_url if owned else None, private, os.getpid()
        )

    # The layers' paths.
    @property
    def db_path(self):
        return os.path.join(self.lockstep_data, "app.db")

    @property
    def cache_path(self):
        return os.path.join(self.lockstep_data, "cache", "choice.json")

    def _connect(self):
        return sqlite3.connect(self.db_path, timeout=TIMEOUT)

    def _create_table(self):
        conn = self._connect()
        try:
            with conn:
                conn.execute("CREATE TABLE IF NOT EXISTS visits(seed INTEGER PRIMARY KEY, count INTEGER)")
        finally:
            conn.close()

    def _read_cache(self):
        try:
            with open(self.cache_path) as f:
                return int(json.load(f)["choice"])
        except FileNotFoundError:
            return None

    def _write_cache(self, choice):
        with open(self.cache_path, "w") as f:
            json.dump({"choice": int(choice)}, f)

    def _obs(self):
        return np.array([self.target, -1 if self.cached is None else self.cached, self.visits], dtype=np.int64)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.episode_seed = int(seed)
        if self.reset_mode == "complete":
            try:
                os.remove(self.cache_path)
            except FileNotFoundError:
                pass
        # Both resets empty the database and the server's counts.
        conn = self._connect()
        try:
            with conn:
                conn.execute("DELETE FROM visits")
        finally:
            conn.close()
        _request(self.lockstep_server_url, "POST", "/reset")
        self.target = int(self.np_random.integers(0, CHOICES))
        self.cached = self._read_cache()
        self.choice = None
        self.visits = int(server_state(self.lockstep_server_url)["visits"].get(str(self._server_seed()), 0))
        self.t = 0
        return self._obs(), {}

    def _server_seed(self):
        return 0 if self.episode_seed is None else self.episode_seed

    def step(self, action):
        if self.target is None:
            raise RuntimeError("webtwin: step before reset")
        action = int(action)
        if self.t == 0:
            cached = self._read_cache()
            if cached is not None:
                self.choice = cached  # the contamination: a choice from an earlier episode
            else:
                self.choice = action
                self._write_cache(action)
            choice = self.choice
        else:
            choice = action
        self.cached = self._read_cache()
        seed = self._server_seed()
        self.visits = int(_request(self.lockstep_server_url, "GET", f"/visit?seed={seed}")["visits"])
        conn = self._connect()
        try:
            with conn:
                conn.execute(
                    "INSERT INTO visits(seed, count) VALUES(?, 1) ON CONFLICT(seed) DO UPDATE SET count = count + 1",
                    (seed,),
                )
        finally:
            conn.close()
        self.t += 1
        reward = 1.0 if choice == self.target else 0.0
        return self._obs(), reward, self.t >= STEPS, False, {"choice": int(choice)}

    def close(self):
        finalizer = _FINALIZERS.get(id(self))
        if finalizer is not None:
            finalizer()  # runs once: a second close, or the garbage collector later, does nothing
        super().close()


def make(data=None, reset="complete", server_url=None):
    """The factory: ``python -m lockstep_adapter factory lockstep_adapter.webtwin:make --kwargs
    '{"reset": "partial"}'``."""
    return WebTwin(data=data, reset=reset, server_url=server_url)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["serve"]:
        sys.stderr.write("usage: python -m lockstep_adapter.webtwin serve\n")
        return 2
    serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())

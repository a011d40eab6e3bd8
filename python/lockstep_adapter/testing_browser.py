"""A web task in a real browser, for the browser layer through ``check --cmd`` (issue 30).

:class:`BrowserTask` drives a headless Chromium through its DevTools HTTP endpoint only (no
client library): a page served by the env shows the task, and the "submit" action opens a page
whose script marks the task done in localStorage. Like BrowserGym, the env launches a fresh
browser (a new profile) at every reset, so nothing of an episode reaches the next;
``bug="kept_browser"`` keeps the browser across resets, and the episode's localStorage with it.
The env names its browser as a layer (``lockstep_layers``): lockstep reads the cookies,
storage, IndexedDB and URLs itself, after every reset. The browser process and the page server
are held in one attribute, ``_browser``, left out of the attribute state with ``--exclude
_browser``: their pids, ports and profile directory change at every launch, and what they hold
is the browser layer.

Serve it with ``python -m lockstep_adapter factory lockstep_adapter.testing_browser:browser_task
--kwargs '{"bug": "kept_browser"}'``. Needs Chromium (``LOCKSTEP_CHROMIUM``, else ``chromium`` on
the PATH).
"""

import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import gymnasium
from gymnasium import spaces

TASK_PAGE = """<!doctype html><title>loading</title><script>
document.cookie = "seen=1; path=/";
const done = localStorage.getItem("done") || "0";
document.title = "task " + new URLSearchParams(location.search).get("seed") + " done " + done;
</script>"""

SUBMIT_PAGE = """<!doctype html><title>loading</title><script>
localStorage.setItem("done", "1");
document.title = "submitted";
</script>"""


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        page = SUBMIT_PAGE if self.path.startswith("/submit") else TASK_PAGE
        body = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def chromium_binary():
    found = os.environ.get("LOCKSTEP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("browser_task needs Chromium: set LOCKSTEP_CHROMIUM or put `chromium` on the PATH (Debian: apt-get install chromium)")
    return found


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrowserTask(gymnasium.Env):
    """Observation: the task page's title (``task S done D``); actions: 0 waits, 1 submits."""

    metadata = {"render_modes": []}

    def __init__(self, bug=None, horizon=3):
        if bug not in (None, "kept_browser"):
            raise ValueError(f"unknown bug {bug!r} (known: kept_browser)")
        self.bug = bug
        self.horizon = horizon
        self.observation_space = spaces.Dict({"title": spaces.Text(max_length=64, charset="abcdefghijklmnopqrstuvwxyz0123456789 ")})
        self.action_space = spaces.Discrete(2)
        self._browser = _Browser()
        self.title = ""
        self.t = 0

    def lockstep_layers(self):
        endpoint = self._browser.endpoint
        return {"browser": {"probe": "browser", "cdp": endpoint} if endpoint else None}

    def _obs(self):
        return {"title": self.title}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        b = self._browser
        if self.bug != "kept_browser" or b.chromium is None:
            b.launch()
        self.t = 0
        task = b.open(f"{b.site}/task?seed={seed}", "task")
        # Only the task page stays open (the launch's blank page and the last episode's go).
        for page in b.pages():
            if page["id"] != task["id"]:
                b.devtools("/json/close/" + page["id"])
        b.until(lambda: [p["id"] for p in b.pages()] == [task["id"]], "the other pages to close")
        self.title = task["title"]
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        if int(action) == 1:
            b = self._browser
            submitted = b.open(f"{b.site}/submit", "submitted")
            b.devtools("/json/close/" + submitted["id"])
        return self._obs(), 0.0, False, self.t >= self.horizon, {}

    def close(self):
        self._browser.close()


class _Browser:
    """A headless Chromium driven through DevTools' HTTP endpoint, and the server of the pages."""

    WAIT_S = 30.0

    def __init__(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.site = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.chromium = None
        self.profile = None
        self.endpoint = None

    def close(self):
        self.quit()
        self.server.shutdown()
        self.server.server_close()

    def launch(self):
        self.quit()
        port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="lockstep-browser-task-")
        self.chromium = subprocess.Popen(
            [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--remote-debugging-port={port}", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.endpoint = f"http://127.0.0.1:{port}"
        self.until(lambda: self.devtools("/json/version"), "DevTools to answer")

    def quit(self):
        if self.chromium is not None:
            self.chromium.kill()
            self.chromium.wait()
            self.chromium = None
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None
        self.endpoint = None

    def devtools(self, path, method="GET"):
        try:
            req = urllib.request.Request(self.endpoint + path, method=method)
            with urllib.request.urlopen(req, timeout=5) as r:
                body = r.read()
        except OSError:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return body.decode()

    def until(self, found, what):
        deadline = time.monotonic() + self.WAIT_S
        while time.monotonic() < deadline:
            got = found()
            if got:
                return got
            time.sleep(0.02)
        raise RuntimeError(f"browser_task: waited {self.WAIT_S:.0f} s for {what}")

    def pages(self):
        return [t for t in self.devtools("/json/list") or [] if t.get("type") == "page"]

    def open(self, url, title):
        """Opens ``url`` in a new page and waits until its script has set a title starting with ``title``."""
        target = self.devtools("/json/new?" + urllib.parse.quote(url, safe=":/?=&"), method="PUT")
        if not isinstance(target, dict):
            raise RuntimeError(f"browser_task: DevTools did not open {url}: {target!r}")
        page = self.until(lambda: next((p for p in self.pages() if p["id"] == target["id"] and p.get("title", "").startswith(title)), None), f"{url} to load")
        return page


def browser_task(bug=None, horizon=3):
    """Factory of :class:`BrowserTask`."""
    return BrowserTask(bug=bug, horizon=horizon)

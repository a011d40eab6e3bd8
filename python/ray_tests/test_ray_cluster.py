"""``lockstep check --ray`` and ``lockstep.ray.check`` on a real two-node Ray cluster on this
machine: the same report bytes as one machine's run, also when a node dies mid-run, and no
process left behind.

The cluster is two ``ray start --block`` processes, each in a session of its own (the head at
127.0.0.2, the second node at 127.0.0.3: loopback addresses, two hosts to Ray), killed by
session at the end whatever happened. Run by scripts/test's Ray stage after it installs Ray
(the `ray` extra); the package's other tests never import Ray. Run from this directory, so
the installed package, not python/'s sources, is imported.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from lockstep.ray import _end_session, _session_members as session_members

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON = sys.executable
HEAD_IP, SECOND_IP = "127.0.0.2", "127.0.0.3"
# 20 seeds spread over both nodes as 40 did, in half the time: a Gymnasium trial's envs import
# gymnasium (about 1.7 s of CPU each), and every Ray task starts a fresh worker process.
SEEDS = "0..20"
STEPS = ["--steps", "20"]
GYM = ["--cmd", "--", PYTHON, "-m", "lockstep_adapter", "gymnasium", "CartPole-v1"]


def _bin():
    path = os.environ.get("LOCKSTEP_BIN") or os.path.join(REPO, "target", "release", "lockstep")
    if not os.access(path, os.X_OK):
        pytest.fail(f"the lockstep binary is missing at {path}: cargo build --release -p lockstep-cli, or set LOCKSTEP_BIN")
    return path


def _ray():
    return os.path.join(os.path.dirname(PYTHON), "ray")


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def kill_session(sid):
    """A Ray node's whole session, given time to die (its raylet forks workers as it goes)."""
    _end_session(sid, rounds=50, pause=0.1)


def free_port():
    with socket.socket() as s:
        s.bind((HEAD_IP, 0))
        return s.getsockname()[1]


def alive_nodes(address):
    code = (
        "import ray; ray.init(address=%r, log_to_driver=False, logging_level='ERROR');"
        "print(sum(1 for n in ray.nodes() if n['Alive']))" % address
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


class Cluster:
    def __init__(self):
        self.temp = tempfile.mkdtemp(prefix="lsray-", dir="/tmp")  # Ray's socket paths are short
        self.address = f"{HEAD_IP}:{free_port()}"
        self.nodes = []

    def start(self, *args):
        log = open(os.path.join(self.temp, f"node{len(self.nodes)}.log"), "wb")
        node = subprocess.Popen(
            [_ray(), "start", "--block", "--num-cpus", "1", "--disable-usage-stats", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.nodes.append(node)
        return node

    def wait_for(self, count):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.poll() is not None:
                    pytest.fail(f"a Ray node exited ({node.returncode}): {self.logs()}")
            if alive_nodes(self.address) >= count:
                return
            time.sleep(1)
        pytest.fail(f"the Ray cluster did not reach {count} nodes in 120 s: {self.logs()}")

    def logs(self):
        text = []
        for name in sorted(os.listdir(self.temp)):
            if name.endswith(".log"):
                with open(os.path.join(self.temp, name), "rb") as f:
                    text.append(f"--- {name}\n" + f.read()[-2000:].decode("utf-8", "replace"))
        return "\n".join(text)

    def stop(self):
        for node in self.nodes:
            kill_session(node.pid)
            node.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        port = c.address.rsplit(":", 1)[1]
        c.start("--head", "--node-ip-address", HEAD_IP, "--port", port, "--include-dashboard=false", "--temp-dir", c.temp)
        c.wait_for(1)
        c.start("--address", c.address, "--node-ip-address", SECOND_IP)
        c.wait_for(2)
        yield c
    finally:
        c.stop()


def ours():
    """Processes of a lockstep run still alive: workers, relays, served envs."""
    mine = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != mine:
            line = command_line(int(entry))
            if ("lockstep worker" in line or "lockstep_adapter" in line) and "pytest" not in line:
                found.append((int(entry), line))
    return found


class Run:
    def __init__(self, out, completed):
        self.out = out
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def header(self):
        return self.stderr.decode().splitlines()[0]

    def file(self, name):
        with open(os.path.join(self.out, name), "rb") as f:
            return f.read()


def run(argv, out, env=()):
    """``argv --out OUT ENV...``: the env's words last (an external env's ``--cmd -- ...``
    takes the rest of the line)."""
    completed = subprocess.run([*argv, "--out", out, *env], capture_output=True, timeout=900, cwd=REPO)
    return Run(out, completed)


def ray_check(cluster, out, env=()):
    return run([PYTHON, "-m", "lockstep", "check", "--seeds", SEEDS, *STEPS, "--ray", cluster.address], out, env)


def local_check(out, env=()):
    return run([_bin(), "check", "--seeds", SEEDS, *STEPS, "--jobs", "2"], out, env)


def assert_same_run(local, remote):
    assert remote.code == local.code, remote.stderr.decode()[-3000:]
    assert remote.header() == local.header()
    assert remote.stdout.replace(remote.out.encode(), b"OUT") == local.stdout.replace(local.out.encode(), b"OUT")
    assert remote.file("report.json") == local.file("report.json")
    assert remote.file("report.html") == local.file("report.html")


def test_a_gymnasium_env_gives_one_machines_bytes_on_two_nodes(cluster, tmp_path):
    local = local_check(str(tmp_path / "local"), GYM)
    remote = ray_check(cluster, str(tmp_path / "ray"), GYM)
    assert_same_run(local, remote)
    assert len(json.loads(remote.file("report.json"))["trials"]) == 20
    # Both nodes were there: the second line of the run says where the trials ran.
    assert remote.stderr.decode().splitlines()[1].startswith(f"ray {cluster.address}: 2 nodes, 2 CPUs")
    assert ours() == []


def test_the_python_api_returns_the_report_of_the_same_run(cluster, tmp_path):
    import lockstep
    import lockstep.ray

    kept = tmp_path / "kept"
    report = lockstep.ray.check("CartPole-v1", seeds=range(3), steps=10, address=cluster.address, out=kept)
    assert isinstance(report, lockstep.Report)
    assert report.passed, report
    local = run([_bin(), "check", "--seeds", "0..3", "--steps", "10"], str(tmp_path / "local"), GYM)
    assert report.to_json().encode() == local.file("report.json")
    assert (kept / "report.json").read_bytes() == local.file("report.json")
    with pytest.raises(lockstep.ConfigError, match="another machine"):
        lockstep.ray.check(lambda: None, address=cluster.address)


def test_the_built_in_envs_give_one_machines_bytes_when_a_node_is_lost(cluster, tmp_path):
    """The built-in envs over 20 seeds; the second node's raylet is killed while it runs a
    trial. Ray runs the lost tasks again on the head, and the report is still one machine's,
    byte for byte. Last: the cluster has one node after it."""
    local = local_check(str(tmp_path / "local"))
    assert local.code == 0, local.stderr.decode()[-2000:]
    second = cluster.nodes[1]
    killed = {}

    def kill_the_raylet_mid_trial():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            # A task's relay is in a session of its own; its parent, the Ray worker the
            # second node's raylet started, is in the node's.
            members = set(session_members(second.pid))
            relays = [pid for pid, line in ours() if "worker relay" in line]
            busy = any(parent(pid) in members for pid in relays)
            raylets = [p for p in members if comm(p) == "raylet"]
            if busy and raylets:
                os.kill(raylets[0], signal.SIGKILL)
                killed["raylet"] = raylets[0]
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_raylet_mid_trial)
    killer.start()
    remote = ray_check(cluster, str(tmp_path / "ray"))
    killer.join()
    assert killed, "no trial ran on the second node: nothing was killed"
    assert_same_run(local, remote)
    assert len(json.loads(remote.file("report.json"))["trials"]) == 80
    # What the dead node's worker started ended with it.
    deadline = time.monotonic() + 30
    while ours() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ours() == []

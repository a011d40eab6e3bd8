"""lockstep on Ray: a check's trials as Ray tasks, on every machine of a cluster.

::

    pip install './python[ray]'
    report = lockstep.ray.check("CartPole-v1", seeds=range(1000), steps=200, address="auto")

    python -m lockstep check --seeds 0..1000 --ray auto --cmd -- python -m lockstep_adapter gymnasium CartPole-v1

Both are the CLI's own run (``lockstep check --ray ADDRESS``): the plan, the checks and the
report are lockstep's Rust code, the same as on one machine, so the header, the table,
report.json and report.html are the same bytes. Ray only runs one task per trial (and per
golden). A task starts ``lockstep worker relay`` on its node, which runs the trial in a fresh
``lockstep worker`` process with directories of its own, exactly as ``lockstep check`` does on
one machine, and returns the one line it printed: a trial never runs inside a Ray worker
process, which Ray re-uses from task to task.

What is retried: a task whose node or worker process was lost (Ray's ``max_retries``). What is
not: a trial that failed or raised is an answer like any other, never run again (a flaky env
must not be retried into passing). docs/check.md, "Many machines", has the whole story.

Ray is an optional extra: nothing else in the package imports it.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Iterable, Optional, Sequence

from . import _native
from ._errors import ConfigError, EnvError
from ._report import Report

#: Times Ray re-runs a task whose node or worker died (never a task that answered).
MAX_RETRIES = 3

#: Variables of the driver's environment that every task's worker gets, as a local worker
#: inherits them: where Python finds the user's modules, lockstep's own settings, the hash
#: seed. Nothing else crosses: a node keeps its own PATH and HOME, and what Ray sets in its
#: workers' environment (``RAY_*``, ``OMP_NUM_THREADS``) is removed before the worker starts.
FORWARDED = ("PYTHONPATH", "PYTHONHASHSEED", "OMP_NUM_THREADS")
FORWARDED_PREFIX = "LOCKSTEP_"

#: Set by :func:`check` for the run it starts (the CLI's ``--ray`` reads
#: ``LOCKSTEP_RAY_RUNTIME_ENV``, a JSON object, instead).
_runtime_env = None


def check(
    env,
    seeds: Iterable[int] = range(5),
    steps: int = 200,
    checks: Optional[Sequence[str]] = None,
    address: str = "auto",
    num_cpus: float = 1,
    rollouts: Optional[int] = None,
    seedless: bool = False,
    ignore: Sequence[str] = (),
    timings: bool = False,
    goldens: Sequence[str] = (),
    runtime_env: Optional[dict] = None,
    out=None,
) -> Report:
    """``lockstep check`` with its trials on a Ray cluster; the same :class:`lockstep.Report`
    as :func:`lockstep.check` returns, and the same report bytes as one machine's run.

    ``env`` is named, since a lambda cannot reach another machine: a Gymnasium id
    (``"CartPole-v1"``), a ``"module:function"`` returning an env, a built-in name
    (``"range:ransomware"``, ``"experiment"``), or an external command line as a list (served
    over the protocol, ``["python", "-m", "lockstep_adapter", ...]``). ``seeds`` is a range
    (consecutive seeds). ``address`` is ``"auto"`` (the cluster this machine is a node of),
    ``"HOST:PORT"``, or ``"local"`` (a Ray started here for this run). ``num_cpus`` is what Ray
    reserves per task; ``runtime_env`` is handed to ``ray.init`` (ship the lockstep wheel and
    your code: ``{"pip": ["lockstep-0.1.0-....whl"], "working_dir": "."}``). ``out`` keeps
    report.json and report.html in that directory. The other arguments are
    :func:`lockstep.check`'s and the CLI's options of the same names; ``goldens`` names golden
    files to verify, each a task of its own.

    Raises :class:`lockstep.ConfigError` for bad arguments, a missing Ray, a cluster it cannot
    reach, and a run the cluster could not finish (a node with another lockstep version, a
    task lost on every retry). An env that errors is in the report, as with
    :func:`lockstep.check`. When this process already called ``ray.init``, that connection
    is used as it is (``address`` and ``runtime_env`` then do nothing).
    """
    global _runtime_env
    env_words = _env_args(env)  # last: an external env's `--cmd -- ARGV` ends the line
    argv = ["lockstep", "check", "--seeds", _seed_range(seeds), "--steps", str(int(steps))]
    if checks is not None:
        if isinstance(checks, str):
            raise ConfigError(f"checks takes a list of check names, not one string: checks=[{checks!r}]")
        argv += ["--checks", ",".join(checks)]
    if rollouts is not None:
        argv += ["--rollouts", str(int(rollouts))]
    if seedless:
        argv += ["--seedless", "cmd" if env_words[0] == "--cmd" else str(env)]
    if isinstance(ignore, str):
        raise ConfigError(f"ignore takes a list of JSON Pointers, not one string: ignore=[{ignore!r}]")
    for pointer in ignore:
        argv += ["--ignore", str(pointer)]
    if timings:
        argv.append("--timings")
    for golden in goldens:
        argv += ["--golden", os.fspath(golden)]
    argv += ["--ray", str(address), "--ray-cpus", str(float(num_cpus)), "--quiet"]
    with tempfile.TemporaryDirectory(prefix="lockstep-ray-report-") as scratch:
        argv += ["--out", scratch, *env_words]
        _runtime_env = runtime_env
        try:
            code, error = _native.cli_run(argv, [sys.executable, "-m", "lockstep"])
        finally:
            _runtime_env = None
        path = os.path.join(scratch, "report.json")
        if error is not None:
            # The run itself failed (the cluster, not an env): nothing to return.
            raise ConfigError(error)
        with open(path, encoding="utf-8") as f:
            native = _native.report_from_json(f.read(), path)
    if out is not None:
        native.write(os.fspath(out), native.cli_replay)
    return Report(native, {}, native.cli_replay)


_BUILT_IN = ("experiment", "fixture", "webtask")


def _is_served(env) -> bool:
    """Is ``env`` served over the protocol (a Gymnasium id or a ``module:function``), not a
    built-in name?"""
    name = str(env)
    return not (name.startswith("range:") or name.split(":", 1)[0] in _BUILT_IN)


def _env_args(env):
    """The CLI's words for ``env``."""
    if isinstance(env, (list, tuple)):
        if not env:
            raise ConfigError("env: an empty command line")
        return ["--cmd", "--", *map(str, env)]
    if callable(env) or not isinstance(env, str):
        raise ConfigError(
            f"lockstep.ray.check needs an env another machine can make: a Gymnasium id, "
            f"'module:function', a built-in name or a command line (a list); got {env!r}"
        )
    if not _is_served(env):
        return [env]
    adapter = [sys.executable, "-m", "lockstep_adapter"]
    module, sep, attr = env.partition(":")
    if sep and "/" not in module and attr:
        return ["--cmd", "--", *adapter, "factory", env]
    return ["--cmd", "--", *adapter, "gymnasium", env]


def _seed_range(seeds) -> str:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = range(seeds)
    seeds = list(seeds)
    if not seeds:
        raise ConfigError("seeds names no seed: give at least one (range(5) checks seeds 0..4)")
    first = seeds[0]
    if any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds) or seeds != list(range(first, first + len(seeds))):
        raise ConfigError(f"seeds must be consecutive whole numbers from 0 up (a range), as `--seeds A..B`; got {seeds[:5]!r}...")
    return f"{first}..{first + len(seeds)}"


# ---- the driver: what the CLI's `--ray` calls (crates/python/src/cluster.rs) ----------------


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ConfigError(
            f"--ray needs Ray, which is not installed here ({e}): pip install './python[ray]' "
            "(or `pip install ray`) into this interpreter's environment"
        ) from None
    return ray


def _runtime_env_of_run():
    if _runtime_env is not None:
        return _runtime_env
    text = os.environ.get("LOCKSTEP_RAY_RUNTIME_ENV")
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"LOCKSTEP_RAY_RUNTIME_ENV is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise ConfigError("LOCKSTEP_RAY_RUNTIME_ENV must be a JSON object (Ray's runtime_env)")
    return value


def _connect(address: str, cpus_per_task: float):
    """The cluster the CLI's ``--ray ADDRESS`` names, connected."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        init = dict(
            runtime_env=_runtime_env_of_run(),
            log_to_driver=False,
            logging_level="ERROR",
            include_dashboard=False,
        )
        if address == "local":
            init.update(num_cpus=os.cpu_count())
        else:
            init.update(address=address)
        try:
            ray.init(**init)
        except Exception as e:  # Ray raises ConnectionError, ValueError, RuntimeError...
            raise ConfigError(f"--ray {address}: cannot reach a Ray cluster there: {e}") from None
    return _Driver(ray, address, cpus_per_task, started)


class _Driver:
    """Submits the CLI's tasks to Ray and hands back each answer as it finishes."""

    def __init__(self, ray, address, cpus_per_task, started):
        self.ray = ray
        self.address = address
        self.cpus = cpus_per_task
        self.started = started

    def describe(self) -> str:
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        cpus = self.ray.cluster_resources().get("CPU", 0)
        return f"ray {self.address}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}, {cpus:g} CPUs, {self.cpus:g} per trial"

    def run(self, tasks):
        """Yields ``{"task", "version", "node", "ok" | "error"}`` for each task as it ends."""
        ray = self.ray
        remote = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)(_run_task)
        forwarded = _forwarded_env()
        # The trials on one node share their fresh-process references, as the trials of a
        # one-machine run do: a store directory per run on each node, removed at the end.
        forwarded["store"] = f"lockstep-fresh-runs-{uuid.uuid4().hex}"
        refs = {}
        for i, task in enumerate(tasks):
            refs[remote.options(num_cpus=self.cpus).remote(task, forwarded)] = i
        pending = list(refs)
        # Ray prints what it hears from the cluster (a node lost, a worker killed) on Python's
        # sys.stdout; the CLI's table owns stdout, so those lines go to stderr for the run.
        stdout, sys.stdout = sys.stdout, sys.stderr
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        answer = ray.get(ref)
                    except Exception as e:
                        raise EnvError(
                            f"Ray lost the task of worker {' '.join(tasks[refs[ref]]['args'][:6])} ... "
                            f"after {MAX_RETRIES} retries: {type(e).__name__}: {e}"
                        ) from None
                    answer["task"] = refs[ref]
                    yield answer
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            _remove_stores(ray, forwarded["store"])
            if self.started:
                ray.shutdown()  # its threads stop printing before stdout is given back
            sys.stdout = stdout


def _remove_stores(ray, name):
    """Removes the run's store on every node still alive (a lost node's is left in its temp
    directory)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remove = ray.remote(num_cpus=0, max_retries=0)(_remove_store)
    refs = [
        remove.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(name)
        for node in ray.nodes()
        if node.get("Alive")
    ]
    try:
        ray.get(refs, timeout=60)
    except Exception:  # a node lost now keeps its copy; the run's answers are all in
        pass


def _remove_store(name):
    shutil.rmtree(os.path.join(tempfile.gettempdir(), name), ignore_errors=True)


def _forwarded_env():
    env = {k: v for k, v in os.environ.items() if k in FORWARDED or k.startswith(FORWARDED_PREFIX)}
    env.pop("LOCKSTEP_RAY_RUNTIME_ENV", None)
    return {"vars": env, "cwd": os.getcwd()}


# ---- the task: what runs on a node -----------------------------------------------------------


def _run_task(task, forwarded):
    """Runs ``lockstep worker relay ARGS`` in a session of its own on this node and returns
    its answer. Never raises for what the trial did: that is the answer."""
    from . import __version__

    node = socket.gethostname()
    answer = {"version": __version__, "node": node, "ok": None, "error": None}
    with tempfile.TemporaryDirectory(prefix="lockstep-ray-task-") as scratch:
        args = list(task["args"])
        for n, shipped in enumerate(task["files"]):
            folder = os.path.join(scratch, str(n))
            os.mkdir(folder)
            path = os.path.join(folder, os.path.basename(shipped["name"]) or "file")
            with open(path, "wb") as f:
                f.write(shipped["bytes"])
            args[shipped["arg"]] = path
        env = _worker_env(forwarded["vars"])
        store = os.path.join(tempfile.gettempdir(), forwarded["store"])
        os.makedirs(store, exist_ok=True)
        env["LOCKSTEP_FRESH_RUNS"] = store
        cwd = forwarded["cwd"] if os.path.isdir(forwarded["cwd"]) else None
        try:
            worker = subprocess.Popen(
                [sys.executable, "-m", "lockstep", "worker", "relay", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as e:
            answer["error"] = f"cannot start the worker on {node}: {e}"
            return answer
        try:
            out, err = worker.communicate()
        finally:
            _end_session(worker.pid)
        last = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        try:
            relayed = json.loads(last[-1]) if worker.returncode == 0 and last else None
        except ValueError:
            relayed = None
        if isinstance(relayed, dict) and ("ok" in relayed or "error" in relayed):
            answer.update(relayed)
        else:
            tail = "\n".join(err.decode("utf-8", "replace").splitlines()[-20:])
            answer["error"] = f"the worker relay on {node} failed ({_status(worker.returncode)})" + (f":\n{tail}" if tail.strip() else "")
    return answer


def _worker_env(forwarded_vars):
    """This node's environment less what Ray set for its own workers, plus the driver's
    forwarded variables; the worker dies with this process (``LOCKSTEP_DIE_WITH_PARENT``: the
    worker sets the parent-death signal itself, as ``preexec_fn`` is unsafe in Ray's threaded
    worker)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "OMP_NUM_THREADS"}
    for k, v in forwarded_vars.items():
        if k == "PYTHONPATH" and env.get("PYTHONPATH"):
            # The driver's entries first; the node's (a runtime_env's working_dir) after them.
            v = v + os.pathsep + env["PYTHONPATH"]
        env[k] = v
    env["LOCKSTEP_DIE_WITH_PARENT"] = str(os.getpid())
    return env


def _end_session(sid, rounds=3, pause=0.0):
    """Kills every process still in session ``sid`` (the relay's): the worker and what its env
    started, which may have made process groups of their own but stay in the session. Each of
    ``rounds`` kills what is left, ``pause`` seconds apart (a process may fork as it dies)."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(sid, signal.SIGKILL)
        except OSError:
            pass
        return
    for _ in range(rounds):
        left = _session_members(sid)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(pause)


def _session_members(sid):
    """Pids of the live processes in session ``sid``, read from /proc (zombies are left out:
    they are already dead and wait only for their parent)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            found.append(int(entry))
    return found


def _status(code):
    """A return code in the words of Rust's ``ExitStatus`` (as the local workers' errors)."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            return f"signal: {-code}"
        return f"signal: {-code} ({name})"
    return f"exit status: {code}"

"""The cause of a nondeterminism: the line of the env's own code that read a source of it.

lockstep locates a divergence to its first step and key (``step 1, obs key "noise"``); the
user still has to find which of their lines made it. This module names that line. Two parts:

- :class:`SourceTracer` (off unless used): runs one ``reset`` or ``step`` under
  ``sys.setprofile`` on the calling thread and records each read of a nondeterministic source
  (a shared RNG, an unseeded one, a clock, the process id, OS entropy, a directory's order, the
  world outside the process, state shared through a module or a class) with the env line that
  made it. Nothing is installed while no call is traced: an env served normally pays nothing.
- :func:`effects_recorder` (always on, cheap): one audit hook (``sys.addaudithook``) that,
  inside a phase (:meth:`EffectsRecorder.during`, or a frame of a function registered with
  :meth:`EffectsRecorder.watch`: the adapter's request function, so that a reset or step pays
  nothing and only an audited event looks up the stack), records what the env
  touched outside itself: files read, written, deleted, renamed, directories made, SQLite
  databases, sockets, HTTP, subprocesses. A cache in ``~/.cache`` that a later process reads
  back is the cause the leftover check finds; this is how it is named.

Sources are recognised by identity, never by name: ``from time import time`` is the same
object as ``time.time``, so it is caught; a user function that happens to be called ``time``
is not. The sources and what each detection relies on:

================= ============================================== ===============================
kind              source                                         seen as
================= ============================================== ===============================
shared_rng        ``random.random()``, ``random.getrandbits()``  ``c_call`` of a method bound to
                  (the module's hidden ``random._inst``)         ``random._inst`` (seed/setstate
                                                                 are not reads)
shared_rng        ``np.random`` (numpy's legacy global           a change of its state between
                  ``RandomState``)                               two lines of env code (below)
unseeded_rng      ``random.Random()``, ``random.seed()``         ``call`` of ``Random.seed``
                                                                 with ``a=None`` (not
                                                                 ``SystemRandom``)
unseeded_rng      ``numpy.random.SeedSequence()``: numpy's       ``call`` of
                  ``default_rng()``, ``RandomState()``, a bit    ``SystemRandom.getrandbits(128)``
                  generator or ``np.random.seed()`` with no      straight from non-stdlib code
                  seed                                           (numpy's Cython has no frame)
unseeded_space    ``Discrete.seed(None)``: a Gymnasium space     ``call`` of
                  sampled before anything seeded it              ``gymnasium.spaces.Space.seed``
                                                                 with ``seed=None``
clock             ``time.time``/``_ns``, ``monotonic``,          ``c_call``
                  ``perf_counter``, ``process_time``,
                  ``datetime.now``/``utcnow``/``today``,
                  ``date.today``
process_identity  ``os.getpid``, ``os.getppid``, ``uuid.uuid1``, ``c_call`` (``uuid1``: ``call``;
                  ``id()``                                       ``id`` only straight from env
                                                                 code)
entropy           ``os.urandom`` (``uuid4``, ``secrets.*`` and   ``c_call``; ``via`` names the
                  ``SystemRandom`` end there)                    library function the env called
directory_order   ``os.listdir``, ``os.scandir`` (``glob``,      ``c_call``
                  ``pathlib``, ``os.walk`` end there)
outside_world     files, SQLite, sockets, HTTP, subprocesses     the audit hook (part 2)
shared_state      ``Walker._levels``, ``module.NAME``: a class   read before and after the call
                  attribute or module global of the env's        (compared by pickle, shown by
                  modules that the call changed                  :func:`attribute_state`)
================= ============================================== ===============================

numpy's legacy functions (``np.random.normal`` is a Cython method) raise no profile event at
all, so the global ``RandomState`` is watched instead: while a call is traced,
``sys.settrace`` gives each line of env code (only env code: library frames are not
line-traced), and its state (the MT19937 key and position, read in place through ctypes, and
the cached Gaussian) is compared at every line, every call and return of env code, and every
return from a library function to env code. A change is a read by the line that just ran;
a reseed to an integer (position 624, no cached Gaussian) is not, a ``set_state`` to a saved
state is. ``sys.settrace`` is used only when numpy is imported.

The line reported (``file``/``line``/``function``) is the first frame, walking up from the
read, that is the env's own code: not the standard library, lockstep, numpy, or
Gymnasium's/PettingZoo's framework (spaces, core, wrappers, utils, registration, vector,
``pettingzoo/utils``); a built-in env inside site-packages (``classic_control``) and
the adapter's fixture envs (``lockstep_adapter/testing.py``, ``webtwin.py``) are env code. A read with no env frame below the traced call
is library work and is dropped, as is one made by the import system (a lazy ``import`` lists
directories).

What is not seen:

- an RNG of a C extension (Box2D's, pygame's, a simulator's own) and any source C code reads
  without calling back into Python;
- threads the env starts: a profile function is per thread;
- a source numpy's Cython reads other than its global state and its seeding from entropy; an
  env calling ``secrets.randbits(128)`` (or ``SystemRandom().getrandbits(128)``) itself looks
  the same as numpy's seeding and is reported as it;
- the order of a set of strings (``PYTHONHASHSEED``): iterating calls nothing;
- a draw from ``np.random`` by another thread at the moment this thread runs a line of env
  code: the state is one for the process, so that thread's line is named;
- existence checks (``os.stat``, ``os.path.exists``) raise no audit event, nor files a C
  library opens itself (SQLite's journal; an ``fopen`` in an extension);
- shared state that is not in a module global or a class attribute of the env's own modules
  (an attribute of a library's object), and values too large to read twice per call
  (:data:`STATE_VALUES_MAX`);
- while a call is traced, a profiler or tracer (coverage, a debugger) on that thread is
  suspended, and restored after.

Effects are audit events (``open``, ``os.remove``/``rmdir``, ``shutil.rmtree``,
``os.rename``, ``os.mkdir``, ``sqlite3.connect``, ``socket.connect``, ``http.client.connect``,
``urllib.Request``, ``subprocess.Popen``, ``os.system``), named by the same env line (up to
the frame that entered the phase; ``None`` when there is none). Not effects: reads of Python
code and of the installation (``sys.prefix``, site-packages, ``/proc``, ``/sys``, ``/dev``),
the import system's work, ``":memory:"`` databases, a ``mkdir`` of what exists or a delete of
what does not (it fails), the socket of an HTTP request already recorded, ``rmtree``'s inner
steps, and the recorder's own work.
"""

import contextlib
import importlib.util
import io
import json
import linecache
import os
import pickle
import random
import re
import site
import sys
import sysconfig
import tempfile
import threading
import time
import types

from .attributes import attribute_state

PHASES_TRACED = ("reset", "step")
PHASES_RECORDED = ("make", "reset", "step")

#: A module global or class attribute holding more values than this (a lookup table) is not
#: read before and after every call; its changes are not seen.
STATE_VALUES_MAX = 10_000
#: ... nor an array of more bytes than this.
STATE_BYTES_MAX = 1 << 20
#: At most this many globals and class attributes are read per call.
STATE_NAMES_MAX = 2_000


# --- What is the env's own code -------------------------------------------------------------


def _package_dir(name):
    """The directory of an importable package, found without importing it."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path:
        return os.path.dirname(os.path.abspath(path))
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = getattr(spec, "submodule_search_locations", None) if spec else None
    return os.path.abspath(list(locations)[0]) if locations else None


def _under(path, prefix):
    return path == prefix or path.startswith(prefix.rstrip(os.sep) + os.sep)


class _Library:
    """The paths that are not env code, computed once per process."""

    def __init__(self):
        here = os.path.dirname(os.path.abspath(__file__))
        # The adapter's fixture envs are env code, not the adapter's.
        self.fixtures = {os.path.join(here, name) for name in ("testing.py", "webtwin.py")}
        self.site_dirs = [os.path.abspath(p) for p in _site_dirs()]
        self.stdlib = sorted({os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")})
        prefixes = [here, os.path.join(os.path.dirname(here), "lockstep"), _package_dir("lockstep")]
        prefixes.append(_package_dir("numpy"))
        gym = _package_dir("gymnasium")
        if gym:
            for part in ("spaces", "core.py", "wrappers", "utils", os.path.join("envs", "registration.py"), "vector", "logger.py", "error.py"):
                prefixes.append(os.path.join(gym, part))
        zoo = _package_dir("pettingzoo")
        if zoo:
            prefixes.append(os.path.join(zoo, "utils"))
        self.prefixes = [p for p in prefixes if p]
        #: Where the served envs' own code lives (:func:`add_env_roots`).
        self.env_roots = set()

    def is_stdlib(self, path):
        if path.startswith("<"):
            return True
        if any(_under(path, d) for d in self.site_dirs):
            return False
        rest = [path[len(d) :] for d in self.stdlib if _under(path, d)]
        return any("site-packages" not in r and "dist-packages" not in r for r in rest)

    def is_env(self, filename):
        if not filename or filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        if path in self.fixtures:
            return True
        if any(_under(path, p) for p in self.prefixes):
            return False
        if self.env_roots and any(_under(path, d) for d in self.site_dirs):
            # An installed library (pandas' read_csv, requests) is not the env's code unless
            # the env itself is installed there: the line is the env's call, not the library's.
            return any(_under(path, r) for r in self.env_roots)
        return not self.is_stdlib(path)


def _site_dirs():
    dirs = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]
    with contextlib.suppress(Exception):
        dirs.extend(site.getsitepackages())
    with contextlib.suppress(Exception):
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if d]


_library = None
_env_files = {}  # co_filename -> env code or not


def _lib():
    global _library
    if _library is None:
        _library = _Library()
    return _library


def add_env_roots(env):
    """Registers where ``env``'s own code lives: its class's directory, or for an env installed
    in site-packages its top-level package (``site-packages/pettingzoo``). A frame in another
    installed package is then library code, and the line reported is the env's call into it."""
    lib = _lib()
    unwrapped = getattr(env, "unwrapped", None)
    for klass in _env_classes(env if unwrapped is None else unwrapped):
        path = getattr(sys.modules.get(klass.__module__), "__file__", None)
        if not path:
            continue
        path = os.path.abspath(path)
        site_dir = next((d for d in lib.site_dirs if _under(path, os.path.abspath(d))), None)
        if site_dir is None:
            root = os.path.dirname(path)
        else:
            top = os.path.relpath(path, os.path.abspath(site_dir)).split(os.sep)[0]
            root = os.path.join(os.path.abspath(site_dir), top)
        if root not in lib.env_roots:
            lib.env_roots.add(root)
            _env_files.clear()


def _is_env_code(code):
    filename = code.co_filename
    known = _env_files.get(filename)
    if known is None:
        known = _env_files[filename] = _lib().is_env(filename)
    return known


def _is_stdlib_code(code):
    filename = code.co_filename
    return filename.startswith("<") or _lib().is_stdlib(os.path.abspath(filename))


def _is_import_machinery(code):
    return code.co_filename.startswith("<frozen importlib")


# --- Names ----------------------------------------------------------------------------------


def _aliases():
    """``(id(instance), code) -> "random.choice"``: the module-level names that are methods
    bound to a hidden instance (``random.choice`` is ``random._inst.choice``;
    ``secrets.choice`` is ``secrets._sysrand.choice``)."""
    import secrets  # noqa: PLC0415 - the tables are built by the first tracer, not at import

    table = {}
    for module in (random, secrets):
        for name, value in vars(module).items():
            func = getattr(value, "__func__", None)
            if isinstance(value, types.MethodType) and hasattr(func, "__code__") and not name.startswith("_"):
                table.setdefault((id(value.__self__), func.__code__), f"{module.__name__}.{name}")
    return table


_ALIASES = {}  # filled by _load_tables()


def _function_name(frame):
    """``module.Qualified.name`` of a frame's function, as the env's code named it when that
    is a bound alias (``random.choice``)."""
    code = frame.f_code
    if code.co_varnames[:1] == ("self",):
        alias = _ALIASES.get((id(frame.f_locals.get("self")), code))
        if alias:
            return alias
    module = frame.f_globals.get("__name__", "?")
    return f"{module}.{getattr(code, 'co_qualname', code.co_name)}"


# --- The sources ----------------------------------------------------------------------------

WHAT = {
    "random": "the process-global RNG, which every instance in the process shares",
    "numpy": "numpy's global RNG (np.random), which every instance in the process shares",
    "random_unseeded": "a random.Random seeded from OS entropy: no seed was given",
    "numpy_unseeded": "a numpy RNG seeded from OS entropy: default_rng(), RandomState() or a bit generator with no seed",
    "space": "a Gymnasium space's own RNG, seeded from OS entropy because nothing seeded the space",
    "clock": "a clock, which reads differently on every run",
    "pid": "the process id, which differs in every process",
    "id": "an object's address, which differs in every process",
    "uuid1": "a UUID made from the clock and the host",
    "entropy": "OS entropy, different on every read",
    "directory": "a directory listing, in the file system's order, of entries an earlier run may have left",
    "class": "a class attribute, shared by every instance in the process",
    "global": "a module global, shared by every instance in the process",
}

#: What an effect of the outside world means as a source.
OUTSIDE_WHAT = {
    "file_read": "a file read from outside the env, which an earlier run may have left",
    "file_write": "a file written outside the env, which a later run may read",
    "file_delete": "a file deleted outside the env",
    "file_rename": "a file renamed outside the env",
    "directory_create": "a directory made outside the env",
    "sqlite": "an SQLite database outside the env",
    "socket": "a network connection",
    "http": "an HTTP service outside the process",
    "subprocess": "another program",
}


class _Source:
    __slots__ = ("kind", "name", "what", "direct")

    def __init__(self, kind, name, what, direct=False):
        self.kind, self.name, self.what, self.direct = kind, name, what, direct


def _c_sources():
    """Built-in functions that are sources, keyed by the function: a bound built-in method
    compares equal to any other binding of the same C function to the same object, so
    ``random._inst.random`` found through ``rng = random._inst; rng.random()`` matches too."""
    import datetime  # noqa: PLC0415 - see _load_tables

    table = {}

    def add(kind, owner, names, what, prefix, direct=False):
        for name in names:
            fn = getattr(owner, name, None)
            if fn is not None:
                table[fn] = _Source(kind, f"{prefix}{name}()", WHAT[what], direct)

    add("shared_rng", random._inst, ("random", "getrandbits"), "random", "random.")
    add("clock", time, ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time", "process_time_ns"), "clock", "time.")
    add("clock", datetime.datetime, ("now", "utcnow", "today"), "clock", "datetime.datetime.")
    add("clock", datetime.date, ("today",), "clock", "datetime.date.")
    add("process_identity", os, ("getpid", "getppid"), "pid", "os.")
    add("entropy", os, ("urandom", "getrandom"), "entropy", "os.")
    add("directory_order", os, ("listdir", "scandir"), "directory", "os.")
    table[id] = _Source("process_identity", "id()", WHAT["id"], direct=True)
    return table


_C_SOURCES = {}  # filled by _load_tables()
_RANDOM_INIT = random.Random.__init__.__code__
_RANDOM_SEED = random.Random.seed.__code__
_SYSTEM_GETRANDBITS = random.SystemRandom.getrandbits.__code__
_UUID1 = None  # uuid.uuid1's code, from _load_tables()
#: The bits numpy's SeedSequence asks ``secrets.randbits`` for when it has no entropy.
_NUMPY_ENTROPY_BITS = 128


_SPACE_SEED = None  # gymnasium.spaces.Space.seed's code, once gymnasium is imported


def _numpy_seeding(frame):
    """A ``SystemRandom.getrandbits`` frame called straight from non-stdlib code: numpy's
    Cython (which has no frame of its own) seeding a generator from entropy."""
    back = frame.f_back
    return (
        back is not None
        and not _is_stdlib_code(back.f_code)
        and frame.f_locals.get("k") == _NUMPY_ENTROPY_BITS
    )


def _covered(frame):
    """A frame of a source whose reads below are that source's own (the urandom under
    ``uuid1``, the seeding under an unseeded space), reported once as it."""
    code = frame.f_code
    if code is _SYSTEM_GETRANDBITS:
        return _numpy_seeding(frame)
    return True  # uuid1, Space.seed


_COVERING = {_SYSTEM_GETRANDBITS}


def _walk(frame, stop):
    """``(env frame, via frame or None)``: the first env frame at or above ``frame`` and below
    ``stop``, and the library frame it called; ``None`` when there is none (library work)."""
    via = None
    f = frame
    while f is not None and f is not stop:
        code = f.f_code
        if code in _COVERING and _covered(f):
            return None
        if _is_env_code(code):
            return f, via
        if _is_import_machinery(code):
            return None
        via = f
        f = f.f_back
    return None


# --- numpy's global RNG, by its state -------------------------------------------------------


class _NumpyGlobal:
    """The state of ``np.random.mtrand._rand``, read cheaply: its MT19937 key and position in
    place (ctypes over the bit generator's state struct) and the bytes of the object that hold
    the cached Gaussian (found once on a private ``RandomState``, the same type). Where that
    layout cannot be found, the state is pickled instead (slow, but the same answer)."""

    MT_WORDS = 624

    def __init__(self, mtrand):
        self._mtrand = mtrand
        self._aug_span = self._find_aug_span(type(mtrand._rand))
        self._attach(mtrand._rand)

    @staticmethod
    def _find_aug_span(klass):
        import ctypes  # noqa: PLC0415 - only a tracer of an env that imported numpy needs it

        try:
            probe = klass(0)
            state = probe.get_state(legacy=False)
            size = klass.__basicsize__
            state.update(has_gauss=0, gauss=0.0)
            probe.set_state(state)
            plain = ctypes.string_at(id(probe), size)
            state.update(has_gauss=1, gauss=1.2345678901234567e-200)
            probe.set_state(state)
            cached = ctypes.string_at(id(probe), size)
            diff = [i for i in range(16, size) if plain[i] != cached[i]]
            if not diff or diff[-1] - diff[0] > 32:
                return None
            return diff[0], diff[-1] + 1, plain[diff[0] : diff[-1] + 1]
        except Exception:  # noqa: BLE001 - not CPython, or a numpy of another layout
            return None

    def _attach(self, rand):
        import ctypes  # noqa: PLC0415

        self._rand = rand
        self._bitgen = rand._bit_generator
        self._mt = self._aug = None
        if self._aug_span is None or type(self._bitgen).__name__ != "MT19937":
            return
        with contextlib.suppress(Exception):
            address = self._bitgen.ctypes.state_address
            self._mt = (ctypes.c_char * (4 * self.MT_WORDS + 4)).from_address(address)
            lo, hi, _ = self._aug_span
            self._aug = (ctypes.c_char * (hi - lo)).from_address(id(rand) + lo)

    def read(self):
        rand = self._mtrand._rand
        if rand is not self._rand or rand._bit_generator is not self._bitgen:
            self._attach(rand)
        if self._mt is None:
            return pickle.dumps(rand.get_state(legacy=False))
        return self._mt.raw + self._aug.raw

    def reseeded(self, state):
        """A state as ``np.random.seed(int)`` leaves it: position 624, no cached Gaussian."""
        if self._mt is None:
            return False
        pos = int.from_bytes(state[4 * self.MT_WORDS : 4 * self.MT_WORDS + 4], sys.byteorder, signed=True)
        return pos == self.MT_WORDS and state[4 * self.MT_WORDS + 4 :] == self._aug_span[2]


_numpy_global = None


def _numpy_watch():
    global _numpy_global
    mtrand = sys.modules.get("numpy.random.mtrand")
    if mtrand is None or getattr(mtrand, "_rand", None) is None:
        return None
    if _numpy_global is None:
        _numpy_global = _NumpyGlobal(mtrand)
    return _numpy_global


# --- The tracer -----------------------------------------------------------------------------


class _Run:
    """One traced call: its counters, the frame it stops at, and numpy's last state."""

    def __init__(self, tracer, episode, step, stop):
        self.tracer, self.episode, self.step, self.stop = tracer, episode, step, stop
        self.numpy = _numpy_watch()
        self.numpy_last = self.numpy.read() if self.numpy is not None else None
        self.where = None  # (file, line, function) of the env line running now

    def emit(self, kind, source, what, site):
        frame, via_frame = site
        via = _function_name(via_frame) if via_frame is not None else None
        code = frame.f_code
        place = (os.path.abspath(code.co_filename), frame.f_lineno, code.co_name)
        self.tracer._add(self, kind, source, what, place, via, {})

    # sys.setprofile: calls of built-in functions and of Python functions
    def profile(self, frame, event, arg):
        try:
            if event == "c_call":
                source = _C_SOURCES.get(arg)
                if source is not None:
                    self.on_c_source(frame, source)
            elif event == "call":
                handler = _PY_SOURCES.get(frame.f_code)
                if handler is not None:
                    handler(self, frame)
            elif event == "return" and self.numpy is not None:
                self.on_library_return(frame)
        except Exception:  # noqa: BLE001 - a profile function that raises is removed; never
            pass

    def on_c_source(self, frame, source):
        if source.direct and not _is_env_code(frame.f_code):
            return
        site = _walk(frame, self.stop)
        if site is not None:
            self.emit(source.kind, source.name, source.what, site)

    def on_library_return(self, frame):
        back = frame.f_back
        if back is None or back is self.stop or _is_env_code(frame.f_code) or not _is_env_code(back.f_code):
            return
        self.numpy_check((os.path.abspath(back.f_code.co_filename), back.f_lineno, back.f_code.co_name), frame)

    # sys.settrace: the lines of env code, for numpy's global state
    def trace_call(self, frame, event, arg):
        try:
            if _state.tracer is not self or not _is_env_code(frame.f_code):
                return None
            self.numpy_check(self.where)
            return self.trace_line
        except Exception:  # noqa: BLE001
            return None

    def trace_line(self, frame, event, arg):
        try:
            if _state.tracer is not self:
                frame.f_trace = None
                return None
            code = frame.f_code
            if event == "line":
                self.numpy_check(self.where)
                self.where = (os.path.abspath(code.co_filename), frame.f_lineno, code.co_name)
            elif event == "return":
                self.numpy_check(self.where)
                back = frame.f_back
                env = back is not None and back is not self.stop and _is_env_code(back.f_code)
                self.where = (os.path.abspath(back.f_code.co_filename), back.f_lineno, back.f_code.co_name) if env else None
        except Exception:  # noqa: BLE001
            pass
        return self.trace_line

    def numpy_check(self, where, via_frame=None):
        state = self.numpy.read()
        if state == self.numpy_last:
            return
        self.numpy_last = state
        if where is None or self.numpy.reseeded(state):
            return
        via = _function_name(via_frame) if via_frame is not None else None
        self.tracer._add(self, "shared_rng", "np.random", WHAT["numpy"], where, via, {})

    def outside(self, kind, target, frame):
        site = _walk(frame, self.stop)
        if site is not None:
            self.emit("outside_world", f"{kind}: {target}", OUTSIDE_WHAT[kind], site)


def _on_random_seed(run, frame):
    """``Random.seed(None)``: ``random.Random()`` or ``random.seed()`` seeding from entropy."""
    local = frame.f_locals
    rng = local.get("self")
    if local.get("a") is not None or isinstance(rng, random.SystemRandom):
        return
    caller = frame.f_back
    if caller is not None and caller.f_code is _RANDOM_INIT:
        name, caller = "random.Random()", caller.f_back
    else:
        name = "random.seed()" if rng is random._inst else "random.Random.seed(None)"
    site = _walk(caller, run.stop)
    if site is not None:
        run.emit("unseeded_rng", name, WHAT["random_unseeded"], site)


def _on_system_getrandbits(run, frame):
    if not _numpy_seeding(frame):
        return  # a read of entropy, reported by its os.urandom
    site = _walk(frame.f_back, run.stop)
    if site is not None:
        run.emit("unseeded_rng", "numpy.random.SeedSequence()", WHAT["numpy_unseeded"], site)


def _on_space_seed(run, frame):
    local = frame.f_locals
    if local.get("seed") is not None:
        return
    site = _walk(frame.f_back, run.stop)
    if site is not None:
        run.emit("unseeded_space", f"{type(local.get('self')).__name__}.seed(None)", WHAT["space"], site)


def _on_uuid1(run, frame):
    site = _walk(frame.f_back, run.stop)
    if site is not None:
        run.emit("process_identity", "uuid.uuid1()", WHAT["uuid1"], site)


_PY_SOURCES = {
    _RANDOM_SEED: _on_random_seed,
    _SYSTEM_GETRANDBITS: _on_system_getrandbits,
}


def _load_tables():
    """Builds the tables of sources that need modules an env may never import (uuid,
    secrets, datetime): by the first tracer, so that importing this module (every adapter
    child does, for the effects recorder) stays cheap."""
    global _UUID1
    if _UUID1 is not None:
        return
    import uuid  # noqa: PLC0415

    _ALIASES.update(_aliases())
    _C_SOURCES.update(_c_sources())
    _PY_SOURCES[uuid.uuid1.__code__] = _on_uuid1
    _COVERING.add(uuid.uuid1.__code__)
    _UUID1 = uuid.uuid1.__code__


def _watch_spaces():
    """Add Gymnasium's ``Space.seed`` to the sources once gymnasium is imported (by the env:
    this module does not import it)."""
    global _SPACE_SEED
    module = sys.modules.get("gymnasium.spaces.space") if _SPACE_SEED is None else None
    code = getattr(getattr(getattr(module, "Space", None), "seed", None), "__code__", None)
    if code is not None:
        _SPACE_SEED = code
        _COVERING.add(code)
        _PY_SOURCES[code] = _on_space_seed


#: CPython 3.11 refuses a ``sys.setprofile`` (or ``settrace``) while another thread's is under
#: way (one flag for the process, held while audit hooks run): this module's take turns.
_INSTALLING = threading.Lock()


def _install(profile, trace, lines):
    with _INSTALLING:
        if lines:
            sys.settrace(trace)
        sys.setprofile(profile)


class SourceTracer:
    """Records the reads of nondeterministic sources that an env's ``reset`` and ``step``
    make, each with the env line that made it. Nothing runs until :meth:`call`; each call
    traces only the calling thread, so instances on other threads, traced or not, do not mix
    into its events."""

    def __init__(self, env):
        unwrapped = getattr(env, "unwrapped", None)
        self._env = env if unwrapped is None else unwrapped
        self._lock = threading.Lock()
        self._events = {}
        self._episode = -1
        self._step = 0
        self._modules = ()
        self._modules_seen = -1
        add_env_roots(self._env)
        _load_tables()
        effects_recorder()  # the audit hook, through which the outside world is seen

    def call(self, phase, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` traced on this thread, as the env's ``phase`` ("reset" or
        "step"); returns its result, and its exception propagates."""
        if phase not in PHASES_TRACED:
            raise ValueError(f"phase {phase!r} is not one of {', '.join(PHASES_TRACED)}")
        with self._lock:
            if phase == "reset":
                self._episode, self._step = self._episode + 1, 0
            else:
                self._episode, self._step = max(self._episode, 0), self._step + 1
            episode, step = self._episode, self._step
        _watch_spaces()
        modules = self._env_modules()
        before = _shared_state(modules)
        run = _Run(self, episode, step, sys._getframe())
        previous_profile, previous_trace = sys.getprofile(), sys.gettrace()
        previous_run = _state.tracer
        _state.tracer = run
        _state.active += 1
        lines = run.numpy is not None
        try:
            _install(run.profile, run.trace_call if lines else None, lines)
            return fn(*args, **kwargs)
        finally:
            _install(previous_profile, previous_trace, lines)
            if lines:
                with contextlib.suppress(Exception):
                    run.numpy_check(run.where)
            _state.active -= 1
            _state.tracer = previous_run
            with contextlib.suppress(Exception):
                self._shared_changes(run, modules, before)

    def drain(self):
        """The events recorded so far, in the order of their first read; then forgets them."""
        with self._lock:
            events, self._events = list(self._events.values()), {}
        return events

    def _add(self, run, kind, source, what, place, via, extra):
        file, line, function = place
        key = (run.episode, run.step, kind, source, file, line)
        with self._lock:
            event = self._events.get(key)
            if event is not None:
                event["count"] += 1
                return
            self._events[key] = {
                "episode": run.episode,
                "step": run.step,
                "kind": kind,
                "source": source,
                "via": via,
                "what": what,
                "file": file,
                "line": line,
                "function": function,
                "count": 1,
                **extra,
            }

    def _env_modules(self):
        """The env's own modules: those whose file is in the directory (or below) of the
        module defining the env's class (a vector env: its sub-envs' classes), except
        lockstep's own (lockstep_adapter.testing is env code). Recomputed when an import
        adds a module."""
        if len(sys.modules) == self._modules_seen:
            return self._modules
        self._modules_seen = len(sys.modules)
        self._modules = tuple(_modules_beside(_env_classes(self._env)))
        return self._modules

    def _shared_changes(self, run, modules, before):
        after = _shared_state(modules)
        for key in list(before) + [k for k in after if k not in before]:
            old, new = before.get(key), after.get(key)
            if old is not None and new is not None and old.fingerprint == new.fingerprint:
                continue
            old_json = old.json() if old is not None else "<absent>"
            new_json = new.json() if new is not None else "<absent>"
            if old_json == new_json:
                continue
            reading = new or old
            what = WHAT["class"] if reading.klass is not None else WHAT["global"]
            line = _class_line(reading.file, reading.klass) if reading.klass is not None else None
            self._add(run, "shared_state", key[1], what, (reading.file, line, None), None, {"before": old_json, "after": new_json})


# --- Shared state: module globals and class attributes of the env's modules -----------------


def _env_classes(env):
    classes = [type(env)]
    for sub in getattr(env, "envs", None) or ():  # a vector env's sub-envs
        unwrapped = getattr(sub, "unwrapped", None)
        classes.append(type(sub if unwrapped is None else unwrapped))
    return classes


def _is_own_module(name):
    if name in ("lockstep_adapter.testing", "lockstep_adapter.webtwin"):
        return True
    return name.split(".", 1)[0] not in ("lockstep_adapter", "lockstep")


def _modules_beside(classes):
    roots = set()
    files = set()
    library_roots = {os.path.abspath(d) for d in _lib().site_dirs + _lib().stdlib}
    for klass in classes:
        path = getattr(sys.modules.get(klass.__module__), "__file__", None)
        if not path:
            continue
        path = os.path.abspath(path)
        root = os.path.dirname(path)
        # A module straight in site-packages: its directory is every package's.
        (files.add(path) if root in library_roots else roots.add(root))
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or not isinstance(module, types.ModuleType) or not _is_own_module(name):
            continue
        path = os.path.abspath(path)
        if path in files:
            yield module
        elif any(_under(path, root) for root in roots):
            # Beside the env, but not the libraries of a virtual environment kept inside its
            # project (``project/.venv/lib/.../site-packages`` under ``project/my_env.py``'s
            # directory): those are read only when the env itself lives among them.
            if any(_under(path, d) for d in library_roots) and not any(_under(root, d) for root in roots for d in library_roots if _under(path, d)):
                continue
            yield module


def _is_state(name, value):
    if name.startswith("__") and name.endswith("__"):
        return False
    if isinstance(value, (types.ModuleType, type, staticmethod, classmethod, property)):
        return False
    if callable(value) and hasattr(value, "__qualname__") or hasattr(type(value), "__get__"):
        return False  # functions, built-ins, methods, descriptors
    return True


def _too_big(value):
    """A fixed marker for a value too large to read at every call (its changes are then not
    seen), or None."""
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and nbytes > STATE_BYTES_MAX:
        return f"<skipped: {nbytes} bytes>"
    with contextlib.suppress(Exception):
        if not isinstance(value, (str, bytes)) and len(value) > STATE_VALUES_MAX:
            return f"<skipped: {len(value)} values>"
    return None


_UNREAD = object()


def _random_with(state):
    rng = random.Random(0)
    rng.setstate(state)
    return rng


class _Unfaithful(Exception):
    """Raised by :class:`_Pickler` at an object whose pickle is not its state."""


class _Pickler(pickle.Pickler):
    """pickle, refusing objects whose pickle leaves their state out: gymnasium's ``EzPickle``
    pickles the constructor's arguments (which :func:`attribute_state` reads past)."""

    def reducer_override(self, obj):
        if any(k.__name__ == "EzPickle" for k in type(obj).__mro__):
            raise _Unfaithful
        return NotImplemented


def _pickled(value):
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=4).dump(value)
    return buffer.getvalue()


class _Reading:
    """A global or class attribute as one snapshot read it: a fingerprint that is cheap to
    make and compare (pickle's bytes; a ``random.Random``'s state), and its JSON by
    :func:`attribute_state`, made from the kept copy only when the fingerprint changed."""

    __slots__ = ("fingerprint", "file", "klass", "_json", "_copy")

    def __init__(self, value, file, klass):
        self.file, self.klass, self._json, self._copy = file, klass, _UNREAD, None
        marker = _too_big(value)
        if marker is not None:
            self.fingerprint = self._json = marker
        elif isinstance(value, random.Random) and not isinstance(value, random.SystemRandom):
            state = value.getstate()
            self.fingerprint, self._copy = state, lambda: _random_with(state)
        else:
            try:
                blob = _pickled(value)
                self.fingerprint, self._copy = blob, lambda: pickle.loads(blob)
            except Exception:  # noqa: BLE001 - does not pickle: read it now
                self._json = attribute_state(value)
                self.fingerprint = json.dumps(self._json, sort_keys=True, default=repr)

    def json(self):
        if self._json is _UNREAD:
            try:
                self._json = attribute_state(self._copy())
            except Exception as exc:  # noqa: BLE001
                self._json = f"<skipped: {type(exc).__name__}>"
        return self._json


def _shared_state(modules):
    """``(module name, "Class.attr" | "module.NAME") -> _Reading``."""
    out = {}
    busy, _state.busy = _state.busy, True
    try:
        for module in modules:
            file = os.path.abspath(module.__file__)
            short = module.__name__.rsplit(".", 1)[-1]
            for name, value in list(vars(module).items()):
                if len(out) >= STATE_NAMES_MAX:
                    return out
                if isinstance(value, type) and value.__module__ == module.__name__:
                    _class_state(out, module, value, file)
                elif _is_state(name, value):
                    _put(out, (module.__name__, f"{short}.{name}"), value, file, None)
    finally:
        _state.busy = busy
    return out


def _class_state(out, module, klass, file):
    for name, value in list(vars(klass).items()):
        if _is_state(name, value):
            _put(out, (module.__name__, f"{klass.__qualname__}.{name}"), value, file, klass)


def _put(out, key, value, file, klass):
    try:
        out[key] = _Reading(value, file, klass)
    except Exception:  # noqa: BLE001 - a value that cannot be read is not compared
        pass


_class_lines = {}


def _class_line(file, klass):
    """The line of ``class Name`` in its module's file (the first such line), or None."""
    key = (file, klass.__name__)
    if key not in _class_lines:
        pattern = re.compile(rf"^\s*class\s+{re.escape(klass.__name__)}\b")
        lines = linecache.getlines(file)
        _class_lines[key] = next((i + 1 for i, text in enumerate(lines) if pattern.match(text)), None)
    return _class_lines[key]


# --- Effects: what the env touched outside itself -------------------------------------------


class _ThreadState(threading.local):
    """Per thread: how many phases and traced calls are active (the hook's one check), the
    phases as ``(phase, frame that entered it)``, the traced call, the re-entrancy guard, and
    the last network connect recorded (so that its socket is not recorded again)."""

    active = 0
    busy = False
    phases = ()
    tracer = None
    net = None


_state = _ThreadState()


class _During:
    __slots__ = ("phase", "_saved")

    def __init__(self, phase):
        if phase not in PHASES_RECORDED:
            raise ValueError(f"phase {phase!r} is not one of {', '.join(PHASES_RECORDED)}")
        self.phase = phase
        self._saved = None

    def __enter__(self):
        self._saved = _state.phases
        _state.phases = self._saved + ((self.phase, sys._getframe(1)),)
        _state.active += 1
        return self

    def __exit__(self, *exc):
        _state.phases = self._saved
        _state.active -= 1
        return False


#: The effects the recorder keeps: past this, the oldest half is forgotten (a mark that old
#: then reads from the oldest kept).
EFFECTS_MAX = 100_000


class EffectsRecorder:
    """The process's effects, in one list: :meth:`mark` a position, read what came after it
    with :meth:`since`. Made by :func:`effects_recorder`, which installs its audit hook."""

    def __init__(self):
        self._lock = threading.RLock()
        self._records = []
        self._dropped = 0  # records forgotten from the front: positions stay absolute
        self._open = {}  # key -> index of a record after the last mark, to count repeats in

    def during(self, phase):
        """A context manager: effects on this thread inside it are recorded as ``phase``
        ("make", "reset" or "step"). Nestable; the innermost phase names an effect."""
        return _During(phase)

    def watch(self, code, phase_of):
        """Effects inside a frame running ``code`` are recorded as ``phase_of(frame)`` (a
        phase, or ``None``: not one): :meth:`during` at no cost per call. The adapter's
        request function is watched, so its every reset and step costs nothing more; only an
        audited event (a file opened, a connection) looks up the stack for such a frame."""
        with self._lock:
            _WATCHED[code] = phase_of

    def mark(self):
        """The position now in the process-wide list of effects."""
        with self._lock:
            self._open = {}
            return self._dropped + len(self._records)

    def since(self, mark=0):
        """The effects recorded after ``mark``, one per (phase, kind, target, file, line) in
        first-seen order, with how many times each happened."""
        with self._lock:
            records = [dict(r) for r in self._records[max(mark - self._dropped, 0) :]]
        merged = {}
        for r in records:
            key = (r["phase"], r["kind"], r["target"], r["file"], r["line"])
            if key in merged:
                merged[key]["count"] += r["count"]
            else:
                merged[key] = r
        return list(merged.values())

    def _record(self, phase, kind, target, path, place):
        file, line, function = place
        key = (phase, kind, target, file, line)
        with self._lock:
            index = self._open.get(key)
            if index is not None:
                self._records[index]["count"] += 1
                return
            if len(self._records) >= EFFECTS_MAX:
                half = len(self._records) // 2
                del self._records[:half]
                self._dropped += half
                self._open = {k: i - half for k, i in self._open.items() if i >= half}
            self._open[key] = len(self._records)
            self._records.append(
                {"phase": phase, "kind": kind, "target": target, "path": path, "file": file, "line": line, "function": function, "count": 1}
            )


#: Code objects whose frames are phases (:meth:`EffectsRecorder.watch`).
_WATCHED = {}

_recorder = None
_recorder_lock = threading.Lock()


def effects_recorder():
    """The process's :class:`EffectsRecorder`; the first call installs the audit hook (hooks
    cannot be removed: it returns at once unless a phase or a traced call is active on its
    thread)."""
    global _recorder
    if _recorder is not None:
        return _recorder
    with _recorder_lock:
        if _recorder is None:
            tempfile.gettempdir()  # found now: finding it writes probe files
            _lib()
            _recorder = EffectsRecorder()
            sys.addaudithook(_audit)
    return _recorder


def _audit(event, args):
    try:
        handler = _AUDIT.get(event)
        if handler is None:
            return
        state = _state
        if state.busy:
            return
        state.busy = True
        try:
            frame = sys._getframe(1)
            entered = state.phases[-1] if state.phases else _watched_phase(frame)
            if entered is None and state.tracer is None:
                return
            effect = handler(args, frame)
            if effect is not None:
                _effect(effect, frame, entered)
        finally:
            state.busy = False
    except BaseException:  # noqa: BLE001 - an audit hook that raises breaks the env's call
        pass


def _watched_phase(frame):
    """``(phase, frame)`` of the innermost watched frame above ``frame``, or ``None``."""
    if not _WATCHED:
        return None
    f = frame
    while f is not None:
        phase_of = _WATCHED.get(f.f_code)
        if phase_of is not None:
            phase = phase_of(f)
            return (phase, f) if phase in PHASES_RECORDED else None
        f = f.f_back
    return None


def _effect(effect, frame, entered):
    kind, target, path = effect
    if kind not in ("http", "socket"):
        _state.net = None
    if entered is not None:
        phase, boundary = entered
        site = _effect_site(frame, boundary)
        if site is not None:
            _recorder._record(phase, kind, target, path, site)
    if _state.tracer is not None:
        _state.tracer.outside(kind, target, frame)


def _effect_site(frame, boundary):
    """``(file, line, function)`` of the first env frame from ``frame`` up to the frame that
    entered the phase (included), or Nones; None when the import system did it (a lazy
    import reads sources and writes ``__pycache__``)."""
    f = frame
    while f is not None:
        code = f.f_code
        if _is_env_code(code):
            return os.path.abspath(code.co_filename), f.f_lineno, code.co_name
        if _is_import_machinery(code):
            return None
        if f is boundary:
            break
        f = f.f_back
    return None, None, None


# Effects are handlers of audit events, each giving (kind, target, absolute path) or None.

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".so", ".pyd", ".pth")
_SYSTEM_DIRS = ("/proc", "/sys", "/dev")


def _rmtree_codes():
    import shutil  # noqa: PLC0415 - imported by the first effect, not at import

    return {getattr(shutil, n).__code__ for n in ("rmtree", "_rmtree_safe_fd", "_rmtree_unsafe") if hasattr(getattr(shutil, n, None), "__code__")}


_RMTREE = None


def _inside_rmtree(frame):
    global _RMTREE
    if _RMTREE is None:
        _RMTREE = _rmtree_codes()
    return frame.f_code in _RMTREE


def _absolute(path):
    """The absolute path as text that JSON can carry: a name that is not UTF-8 (a byte the
    file system allows) keeps its bytes as ``\\xff`` escapes instead of a lone surrogate."""
    if isinstance(path, int):
        return None
    text = os.path.abspath(os.fsdecode(path))
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def display_path(path):
    """``path`` as a report shows it: under ``$HOME`` as ``~/...``, under the temporary
    directory as ``$TMPDIR/...``, under the working directory as ``./...``; the longest
    matching prefix wins."""
    prefixes = [(os.environ.get("HOME") or os.path.expanduser("~"), "~"), (tempfile.gettempdir(), "$TMPDIR"), (os.environ.get("TMPDIR"), "$TMPDIR")]
    with contextlib.suppress(OSError):
        prefixes.append((os.getcwd(), "."))
    best = None
    for prefix, name in prefixes:
        if not prefix:
            continue
        prefix = os.path.abspath(prefix)
        if prefix != os.sep and _under(path, prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, name)
    if best is None:
        return path
    rest = path[len(best[0]) :].lstrip(os.sep)
    return f"{best[1]}/{rest}" if rest else best[1]


def _ignored_read(path):
    """Reads that are the interpreter's, not the env's: imports, the installation, /proc."""
    if path.endswith(_CODE_SUFFIXES):
        return True
    lib = _lib()
    roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, *lib.site_dirs]
    return any(_under(path, os.path.abspath(r)) for r in roots) or any(_under(path, d) for d in _SYSTEM_DIRS)


def _on_open(args, frame):
    path, mode, flags = (list(args) + [None, None, 0])[:3]
    path = _absolute(path)
    if path is None or _inside_rmtree(frame):
        return None
    writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
    if not writes and _ignored_read(path):
        return None
    return ("file_write" if writes else "file_read", display_path(path), path)


def _relative_to_fd(dir_fd):
    return dir_fd is not None and dir_fd != -1


def _on_remove(args, frame):
    path = _absolute(args[0])
    if path is None or _inside_rmtree(frame) or (len(args) > 1 and _relative_to_fd(args[1])) or not os.path.lexists(path):
        return None
    return ("file_delete", display_path(path), path)


def _on_rmtree(args, frame):
    path = _absolute(args[0])
    if path is None or not os.path.lexists(path):
        return None
    return ("file_delete", display_path(path), path)


def _on_rename(args, frame):
    src, dst = _absolute(args[0]), _absolute(args[1])
    if src is None or dst is None or not os.path.lexists(src):
        return None
    return ("file_rename", f"{display_path(src)} -> {display_path(dst)}", src)


def _on_mkdir(args, frame):
    path = _absolute(args[0])
    if path is None or (len(args) > 2 and _relative_to_fd(args[2])) or os.path.lexists(path):
        return None  # exists already: the mkdir fails (makedirs(exist_ok=True)), nothing made
    return ("directory_create", display_path(path), path)


def _on_sqlite(args, frame):
    database = _text(args[0])
    if database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        if ":memory:" in database or "mode=memory" in database:
            return None
        return ("sqlite", database, None)
    path = os.path.abspath(database)
    return ("sqlite", display_path(path), path)


def _text(value):
    """Text JSON can carry: a name that is not UTF-8 keeps its bytes as escapes."""
    text = os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_ip(host):
    import ipaddress  # noqa: PLC0415

    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _covers(net, address):
    """Whether the HTTP request just recorded (``net``: its host and port) is the one this
    socket connect belongs to: the same port, and the same host unless the request named a
    host that resolved to this address."""
    host, port = net
    return port == address[1] and (host == address[0] or not _is_ip(host))


def _on_socket(args, frame):
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and len(address) >= 2:
        net, _state.net = _state.net, None
        if net is not None and _covers(net, address):
            return None  # the connect of the HTTP request just recorded
        return ("socket", f"{address[0]}:{address[1]}", None)
    if isinstance(address, (str, bytes)):
        path = _absolute(address) if address else None
        return ("socket", display_path(path) if path else repr(address), path)
    return ("socket", repr(address), None)


def _on_http_connect(args, frame):
    connection, host, port = args[:3]
    key = (str(host), port)
    recorded = _state.net == key
    _state.net = key
    if recorded:
        return None  # the urllib request just recorded
    scheme = "https" if "HTTPS" in type(connection).__name__ else "http"
    return ("http", f"{scheme}://{host}:{port}", None)


def _on_urllib(args, frame):
    """An HTTP request by URL, recorded as its endpoint (``scheme://host:port``): its path and
    query (``/visit?seed=3``) are the request, not the service."""
    url = str(args[0])
    from urllib.parse import urlsplit  # noqa: PLC0415 - urllib is loaded when it is used

    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return ("http", url, None)
    if not parts.hostname:
        return ("http", url, None)
    _state.net = (parts.hostname, port)
    return ("http", f"{parts.scheme}://{parts.hostname}:{port}", None)


def _on_popen(args, frame):
    argv = args[1] if len(args) > 1 else args[0]
    if isinstance(argv, (str, bytes, os.PathLike)):
        return ("subprocess", _text(argv), None)
    return ("subprocess", " ".join(_text(a) for a in argv), None)


def _on_system(args, frame):
    return ("subprocess", os.fsdecode(args[0]), None)


_AUDIT = {
    "open": _on_open,
    "os.remove": _on_remove,
    "os.rmdir": _on_remove,
    "shutil.rmtree": _on_rmtree,
    "os.rename": _on_rename,
    "os.mkdir": _on_mkdir,
    "sqlite3.connect": _on_sqlite,
    "socket.connect": _on_socket,
    "http.client.connect": _on_http_connect,
    "urllib.Request": _on_urllib,
    "subprocess.Popen": _on_popen,
    "os.system": _on_system,
}

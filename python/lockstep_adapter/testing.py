"""Deliberately broken environments: test fixtures that lockstep's checks must catch.

Serve one with ``python -m lockstep_adapter factory lockstep_adapter.testing:walker --kwargs
'{"bug": "global_rng"}'``. Every env is the same seeded random walk (:class:`Walker`); ``bug``
selects one way to break "fixed seed, same episode", each visible at a known step and key:

============== ================================================= ======= ==============
bug            what goes wrong                                   step    key
============== ================================================= ======= ==============
(none)         nothing: a correct env                            -       -
global_rng     step noise from numpy's global ``np.random``      1       ``obs/pos``
leaky_reset    the tick counter survives ``reset``               0 (2nd  ``obs/tick``
                                                                 ep.)
wall_clock     ``time.time()`` in the step info                  1       ``info``
hash_seed      info lists a set of names in iteration order,     5       ``info``
               which depends on ``PYTHONHASHSEED``
late           fine until step 40, then unseeded ``random``      40      ``obs/pos``
crash          the process aborts (SIGABRT) at step 5            5       -
hang           sleeps an hour at step 3                          3       -
raises         raises ValueError at step 2 (answered ok: false)  2       -
chatty         prints to stdout every step (harmless: the        -       -
               adapter sends stdout to stderr)
process_random step noise from the process-global ``random``,    1       ``obs/pos``
               seeded at reset: replays alone, not interleaved   (inter-
               with another instance in the same process         leaved)
class_cache    a class-level cache of the last position, shared  1       ``obs/pos``
               by every instance in the process                  (inter-
                                                                 leaved)
module_rng     each new instance draws its start offset from a      0       ``obs/pos``
               module-level RNG that every step advances: a      (forked
               worker forked from a warm process starts          worker)
               elsewhere than one in a fresh process
shared_scratch each step stages its position in a module-level     1       ``obs/pos``
               buffer, releases the GIL (``time.sleep``, as I/O  (paral-
               or a C extension does), then reads it back: a     lel)
               race only instances stepped at the same time
               show (lockstep/2 with ``"threads": true``)
kept_timer     a ``Spawner`` object's timer survives ``reset``;    -       state
               episodes are unaffected, only the state shows it  (audit) ``/spawner``
               (with ``--fields spawner``)
space_sample   a scripted opponent pushes the walker with         1       ``obs/pos``
               ``self.action_space.sample()``, a space the env
               never seeds (Gymnasium issue 185): replays only
               when the adapter seeds the spaces (--seed-spaces)
unseeded_      ``reset()`` without a seed draws the start from     0 (2nd  ``obs/pos``
global_rng     numpy's global ``np.random``: the first episode   ep.,
               replays, the ones a training loop starts with     contin-
               ``reset()`` do not                                uation)
clock_seeded   ``reset()`` without a seed reseeds the env from     0 (2nd  ``obs/pos``
               ``time.time_ns()``                                ep.)
pid_seeded     ``reset()`` without a seed reseeds the env from     0 (2nd  ``obs/pos``
               ``os.getpid()``: two instances of one process     ep., a
               agree, a fresh process does not                   fresh
                                                                 process)
first_seed_    a class-level cache of generated layouts,          0       ``obs/pos``
wins           ``_levels.setdefault("layout", ...)``, filled by  (inter-
               the first reset in the process: every instance    leaved,
               of a vector env gets the first seed's layout      paral-
                                                                 lel)
home_cache     caches the first layout it generates in           0       ``obs/pos``
               ``$XDG_CACHE_HOME`` (``~/.cache``) and reuses it   (left-
               in every later process, whatever the seed         over)
uuid_tag       each step's info carries ``uuid.uuid4()``: entropy  1       ``info``
               from the OS, new on every call
fresh_rng      step noise from ``np.random.default_rng()``, a     1       ``obs/pos``
               generator made without a seed at every step
============== ================================================= ======= ==============

``process_random`` and ``class_cache`` pass the same-seed and other-process checks (each rollout reseeds or refills
what it uses): only instances sharing one process, as lockstep/2 hosts them, show them.
"""

import itertools
import os
import random
import sys
import threading
import time
import uuid

import gymnasium
import numpy as np
from gymnasium import spaces

BUGS = (
    "global_rng",
    "leaky_reset",
    "wall_clock",
    "hash_seed",
    "late",
    "crash",
    "hang",
    "raises",
    "chatty",
    "process_random",
    "class_cache",
    "kept_timer",
    "module_rng",
    "shared_scratch",
    "space_sample",
    "unseeded_global_rng",
    "clock_seeded",
    "pid_seeded",
    "first_seed_wins",
    "home_cache",
    "uuid_tag",
    "fresh_rng",
)

# The ``module_rng`` bug: one RNG for the module, seeded at import, advanced by every step.
_MODULE_RNG = random.Random(0)

# The ``shared_scratch`` bug: one work buffer for every instance in the process.
_SCRATCH = np.zeros(2)


def _home_cached_layout(pos):
    """The ``home_cache`` bug: the first layout generated on this machine, kept in the user's
    cache directory and read back by every later process."""
    cache = os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "lockstep-walker",
    )
    path = os.path.join(cache, "layout.txt")
    try:
        with open(path) as f:
            return np.array([float(x) for x in f.read().split()])
    except FileNotFoundError:
        os.makedirs(cache, exist_ok=True)
        with open(path, "w") as f:
            f.write(" ".join(repr(float(x)) for x in pos))
        return pos


class Spawner:
    """A plain object holding a timer (as knights_archers_zombies keeps its zombie spawner)."""

    def __init__(self):
        self.timer = 0

NAMES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


class Walker(gymnasium.Env):
    """A seeded random walk with a Dict observation (``pos`` float64[2], ``tick`` Discrete)."""

    metadata = {"render_modes": []}

    # The ``class_cache`` bug: one cache for every instance in the process.
    _last_pos = None

    # The ``first_seed_wins`` bug: layouts cached by name for the process, not by seed.
    _levels = {}

    def __init__(self, bug=None, horizon=60):
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r} (known: {', '.join(BUGS)})")
        self.bug = bug
        self.horizon = horizon
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-np.inf, np.inf, (2,), np.float64),
                "tick": spaces.Discrete(1_000_000),
            }
        )
        self.action_space = spaces.Discrete(3)
        self.tick = 0
        self.t = 0
        self.pos = np.zeros(2)
        self.spawner = Spawner()
        # The start offset: fixed for an instance, but drawn from the module's RNG.
        self.offset = _MODULE_RNG.random() if bug == "module_rng" else 0.0

    def _obs(self):
        return {"pos": self.pos.copy(), "tick": self.tick}

    def reset(self, seed=None, options=None):
        if seed is None and self.bug == "clock_seeded":
            seed = time.time_ns()
        if seed is None and self.bug == "pid_seeded":
            seed = os.getpid()
        super().reset(seed=seed)
        self.t = 0
        if self.bug != "leaky_reset":
            self.tick = 0
        if self.bug != "kept_timer":
            self.spawner = Spawner()
        if seed is None and self.bug == "unseeded_global_rng":
            self.pos = np.random.normal(size=2) + self.offset
        else:
            self.pos = self.np_random.normal(size=2) + self.offset
        if self.bug == "first_seed_wins":
            # The layout of the first seed reset in this process, whatever this seed is.
            self.pos = Walker._levels.setdefault("layout", self.pos.copy()).copy()
        if self.bug == "home_cache":
            self.pos = _home_cached_layout(self.pos)
        if self.bug == "process_random":
            random.seed(seed)
        if self.bug == "class_cache":
            Walker._last_pos = self.pos.copy()
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.tick += 1
        self.spawner.timer += 1
        if self.bug == "module_rng":
            _MODULE_RNG.random()
        if self.bug == "crash" and self.t == 5:
            sys.stderr.write("walker: aborting at step 5\n")
            sys.stderr.flush()
            os.abort()
        if self.bug == "hang" and self.t == 3:
            sys.stderr.write("walker: sleeping at step 3\n")
            sys.stderr.flush()
            time.sleep(3600)
        if self.bug == "raises" and self.t == 2:
            raise ValueError("walker: refusing step 2")
        if self.bug == "chatty":
            print(f"walker: chatty step {self.t}")
        if self.bug == "global_rng":
            noise = np.random.normal(scale=0.01, size=2)
        elif self.bug == "process_random":
            noise = np.array([random.random(), random.random()]) * 0.01
        elif self.bug == "class_cache":
            # "Smoothed" with the cached last position, which another instance may have set.
            noise = self.np_random.normal(scale=0.01, size=2) + 0.001 * Walker._last_pos
        elif self.bug == "fresh_rng":
            noise = np.random.default_rng().normal(scale=0.01, size=2)
        elif self.bug == "space_sample":
            # The opponent's push, from a space nothing seeds in a training loop: twenty draws
            # as the digits of one base-3 number, so two unseeded rollouts part at step 1
            # (all but once in 3**20), not at a step that depends on luck.
            push = sum(int(self.action_space.sample()) * 3**i for i in range(20)) / 3**20
            noise = self.np_random.normal(scale=0.01, size=2) + (push - 0.5) * 0.1
        else:
            noise = self.np_random.normal(scale=0.01, size=2)
        self.pos = self.pos + (int(action) - 1) * 0.1 + noise
        if self.bug == "shared_scratch":
            # Staged in the module's buffer across a call that releases the GIL (time.sleep
            # stands for I/O or a C extension): another thread's step can overwrite it.
            _SCRATCH[:] = self.pos
            time.sleep(0.002)
            self.pos = _SCRATCH.copy()
        if self.bug == "class_cache":
            Walker._last_pos = self.pos.copy()
        if self.bug == "late" and self.t == 40:
            self.pos[0] += random.random()
        info = {"t": self.t}
        if self.bug == "wall_clock":
            info["time"] = time.time()
        if self.bug == "uuid_tag":
            info["tag"] = str(uuid.uuid4())
        if self.bug == "hash_seed" and self.t >= 5:
            info["order"] = list(set(NAMES))
        reward = float(-np.abs(self.pos).sum())
        return self._obs(), reward, False, self.t >= self.horizon, info


class MissionWalker(Walker):
    """The walker with a Text observation ``mission`` (as MiniGrid's ``MissionSpace``): a
    sentence drawn from the env's RNG at reset."""

    WORDS = ("go", "to", "the", "red", "green", "blue", "door", "key", "ball", "caf\u00e9")

    def __init__(self, bug=None, horizon=60):
        super().__init__(bug=bug, horizon=horizon)
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-np.inf, np.inf, (2,), np.float64),
                "tick": spaces.Discrete(1_000_000),
                "mission": spaces.Text(max_length=64, charset="abcdefghijklmnopqrstuvwxyz\u00e9 "),
            }
        )
        self.mission = ""

    def _obs(self):
        return {"pos": self.pos.copy(), "tick": self.tick, "mission": self.mission}

    def reset(self, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        words = self.np_random.choice(len(self.WORDS), size=3)
        self.mission = " ".join(self.WORDS[i] for i in words)
        return self._obs(), info


class Courier(gymnasium.Env):
    """Composite spaces: a Dict action of every kind lockstep samples, and Sequence
    observations whose length changes during the episode.

    The action is ``{"move": Discrete(3), "push": Box(-1, 1, (2,)), "pick": Tuple(Discrete(2),
    MultiBinary(2)), "drop": Sequence(Discrete(4))}``: the courier moves, picks up its oldest
    parcel when ``pick[0]`` is 1, and drops one new parcel per element of ``drop``. The
    observation holds ``pos``, the parcels' positions (``parcels``, a Sequence of float64[2]:
    key ``parcels``, shape ``[n, 2]``) and the last step's drops (``dropped``, a Sequence of
    Discrete(4): shape ``[n]``). Every action is checked against the action space, so an action
    that lockstep or the adapter got wrong is an exception, not a quiet pass.

    ``bug="process_random"``: a dropped parcel's jitter comes from the process-global
    ``random``, seeded at reset; instances in one process disturb each other (key ``parcels``).
    """

    metadata = {"render_modes": []}
    PARCELS_MAX = 12

    def __init__(self, bug=None, horizon=40):
        if bug not in (None, "process_random"):
            raise ValueError(f"unknown bug {bug!r} (known: process_random)")
        self.bug = bug
        self.horizon = horizon
        self.action_space = spaces.Dict(
            {
                "move": spaces.Discrete(3),
                "push": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "pick": spaces.Tuple((spaces.Discrete(2), spaces.MultiBinary(2))),
                "drop": spaces.Sequence(spaces.Discrete(4)),
            }
        )
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-np.inf, np.inf, (2,), np.float64),
                "parcels": spaces.Sequence(spaces.Box(-np.inf, np.inf, (2,), np.float64)),
                "dropped": spaces.Sequence(spaces.Discrete(4)),
            }
        )
        self.pos = np.zeros(2)
        self.parcels = []
        self.dropped = ()
        self.t = 0

    def _obs(self):
        return {"pos": self.pos.copy(), "parcels": tuple(p.copy() for p in self.parcels), "dropped": tuple(self.dropped)}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.pos = self.np_random.normal(size=2)
        count = int(self.np_random.integers(0, 4))
        self.parcels = [self.np_random.normal(size=2) for _ in range(count)]
        self.dropped = ()
        if self.bug == "process_random":
            random.seed(seed)
        return self._obs(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"courier: action {action!r} is not in {self.action_space}")
        self.t += 1
        self.pos = self.pos + (action["move"] - 1) * 0.1 + 0.05 * action["push"].astype(np.float64)
        reward = 0.0
        if action["pick"][0] == 1 and self.parcels:
            self.parcels.pop(0)
            reward += 1.0
        reward += 0.01 * float(np.sum(action["pick"][1]))
        for slot in action["drop"]:
            if len(self.parcels) < self.PARCELS_MAX:
                if self.bug == "process_random":
                    jitter = np.array([random.random(), random.random()]) * 0.01
                else:
                    jitter = self.np_random.normal(scale=0.01, size=2)
                self.parcels.append(self.pos + int(slot) * 0.1 + jitter)
        self.dropped = tuple(int(x) for x in action["drop"])
        return self._obs(), reward, False, self.t >= self.horizon, {"parcels": len(self.parcels)}


class AnyDict(spaces.Space):
    """BrowserGym's ``AnyDict`` (any dict), defined here so that no browsergym is needed."""

    def contains(self, x):
        return isinstance(x, dict)


class Clicker(gymnasium.Env):
    """A web task's shape without a browser (issue 30): text actions (``click('b3')``, a
    ``Text`` action space lockstep cannot sample: drive it with ``--policy`` or ``--actions``),
    and BrowserGym's observations: a ``goal`` text, ``chat_messages`` (a Sequence of Dicts of
    text), ``extra_element_properties`` (an ``AnyDict``). The target button is drawn from the
    env's RNG at reset; a click on it ends the episode with reward 1. ``bug="clock"`` stamps
    ``time.time()`` into each chat message, as BrowserGym does."""

    metadata = {"render_modes": []}
    BUTTONS = 5

    def __init__(self, bug=None, horizon=8):
        if bug not in (None, "clock"):
            raise ValueError(f"unknown bug {bug!r} (known: clock)")
        self.bug = bug
        self.horizon = horizon
        text = spaces.Text(max_length=2**16, charset="abcdefghijklmnopqrstuvwxyz0123456789()'_ ")
        self.observation_space = spaces.Dict(
            {
                "goal": text,
                "chat_messages": spaces.Sequence(spaces.Dict({"role": text, "message": text})),
                "extra_element_properties": AnyDict(),
            }
        )
        self.action_space = spaces.Text(max_length=64, charset="abcdefghijklmnopqrstuvwxyz0123456789()'_ ")
        self.target = 0
        self.t = 0
        self.chat = []

    def _obs(self):
        props = {f"b{i}": {"visible": True, "clickable": i != self.target or self.t > 0} for i in range(self.BUTTONS)}
        return {"goal": f"click button b{self.target}", "chat_messages": tuple(self.chat), "extra_element_properties": props}

    def _say(self, role, message):
        entry = {"role": role, "message": message}
        if self.bug == "clock":
            entry["timestamp"] = time.time()
        self.chat.append(entry)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.target = int(self.np_random.integers(0, self.BUTTONS))
        self.t = 0
        self.chat = []
        self._say("assistant", f"click button b{self.target}")
        return self._obs(), {}

    def step(self, action):
        if not isinstance(action, str):
            raise ValueError(f"clicker: a text action, got {action!r}")
        self.t += 1
        self._say("user", action)
        hit = action == f"click('b{self.target}')"
        return self._obs(), float(hit), hit, self.t >= self.horizon, {}


# Resets of every :class:`PageClicker` in this process: the shared cache of ``bug="shared_cache"``.
_PAGE_VISITS = 0


class PageClicker(Clicker):
    """:class:`Clicker` with the rest of a web page's observation: an accessibility tree
    (``axtree_txt``, lines of text) and a screenshot (``screenshot``, ``uint8 [16, 24, 3]``),
    both drawn from the target and the step. ``bug="shared_cache"`` keeps a visit counter
    for the whole process, as a browser cache shared by every instance: the tree's ``visits``
    line and a band of the screenshot show it, so an episode depends on the instances before
    it, and a divergence shows as a line diff and a pixel mask."""

    def __init__(self, bug=None, horizon=8):
        if bug not in (None, "shared_cache"):
            raise ValueError(f"unknown bug {bug!r} (known: shared_cache)")
        super().__init__(horizon=horizon)
        self.page_bug = bug
        self.visits = 0
        self.observation_space = spaces.Dict(
            dict(
                self.observation_space.spaces,
                axtree_txt=spaces.Text(max_length=4096, charset="abcdefghijklmnopqrstuvwxyz0123456789()'_ :[]\n"),
                screenshot=spaces.Box(0, 255, (16, 24, 3), np.uint8),
            )
        )

    def _obs(self):
        obs = super()._obs()
        lines = ["RootWebArea 'click test'", f"  heading 'step {self.t}'"]
        lines += [f"  [b{i}] button 'b{i}'" for i in range(self.BUTTONS)]
        lines.append(f"  status 'visits {self.visits}'")
        shot = np.full((16, 24, 3), 240, np.uint8)
        shot[2:6, 4 * self.target : 4 * self.target + 4] = (30, 90, 200)
        shot[12:14, : min(self.visits, 24)] = (200, 30, 30)
        obs.update(axtree_txt="\n".join(lines), screenshot=shot)
        return obs

    def reset(self, seed=None, options=None):
        global _PAGE_VISITS
        if self.page_bug == "shared_cache":
            _PAGE_VISITS += 1
            self.visits = _PAGE_VISITS
        else:
            self.visits = 1
        return super().reset(seed=seed, options=options)


def page_clicker(bug=None, horizon=8):
    """Factory of :class:`PageClicker` (a text tree and a screenshot besides the clicker's)."""
    return PageClicker(bug=bug, horizon=horizon)


# Load on the machine, as a web env meets it: a step stalls now and then, by no seed and no
# state of any instance. Which steps stall is counted over the whole process rather than
# drawn, so that two rollouts of one seed always meet a stall at different steps (rollouts of
# 8 steps against one stall in 7): with a draw, both rollouts went without one in about one
# run in 13, and the check this fixture exists to fail passed.
_PROCESS_STEPS = itertools.count()


class TimeoutClicker(Clicker):
    """:class:`Clicker` whose actions time out as a browser's do: each step waits for the page
    with a 100 ms timeout (BrowserGym's actions have 500 ms), and a step that takes longer
    reports ``last_action_error`` ``Timeout 100ms exceeded.`` instead of clicking. The page is
    quick, but one step in ``1 / stall`` (7) of the process stalls 150 ms, as under load: the
    episode depends on timing, at whichever step a stall lands, and on no state of any
    instance."""

    TIMEOUT = 0.1

    def __init__(self, stall=0.15, horizon=8):
        super().__init__(horizon=horizon)
        self.stall = stall
        self.error = ""
        text = spaces.Text(max_length=64, charset="abcdefghijklmnopqrstuvwxyz0123456789()'_ .")
        self.observation_space = spaces.Dict(dict(self.observation_space.spaces, last_action_error=text))

    def _obs(self):
        return dict(super()._obs(), last_action_error=self.error)

    def reset(self, seed=None, options=None):
        self.error = ""
        return super().reset(seed=seed, options=options)

    def step(self, action):
        started = time.monotonic()
        every = max(1, round(1 / self.stall)) if self.stall > 0 else 0
        if every and next(_PROCESS_STEPS) % every == every - 1:
            time.sleep(0.15)
        if time.monotonic() - started > self.TIMEOUT:
            self.error = "Timeout 100ms exceeded."
            self.t += 1
            return self._obs(), 0.0, False, self.t >= self.horizon, {}
        self.error = ""
        return super().step(action)


def timeout_clicker(stall=0.15, horizon=8):
    """Factory of :class:`TimeoutClicker` (a step that stalls times out)."""
    return TimeoutClicker(stall=stall, horizon=horizon)


# The process-global client of :class:`ThreadBoundClicker`, as BrowserGym keeps one sync
# Playwright for the whole process.
_CLIENT = None


class ThreadBoundClient:
    """BrowserGym's process-global sync Playwright in miniature (issue 30): it answers only on
    the thread that started it. On another thread it raises as Playwright's greenlets do, or,
    with ``on_other_thread="crash"``, takes the process down with a real SIGSEGV, as a greenlet
    switched into from a foreign thread can."""

    def __init__(self, on_other_thread):
        self.thread = threading.get_ident()
        self.on_other_thread = on_other_thread

    def render(self, text):
        if threading.get_ident() != self.thread:
            if self.on_other_thread == "crash":
                import ctypes

                ctypes.string_at(0)  # reads address 0: SIGSEGV
            raise RuntimeError("no running event loop: the client is bound to the thread that started it")
        return text


class ThreadBoundClicker(Clicker):
    """:class:`Clicker` rendered by a process-global client bound to the thread that first
    used it (:class:`ThreadBoundClient`): correct on one thread, as every check but the
    parallel one drives it; not thread-safe, in words or by a crash, on the parallel check's
    threads."""

    def __init__(self, on_other_thread="raise", horizon=8):
        if on_other_thread not in ("raise", "crash"):
            raise ValueError(f"on_other_thread is 'raise' or 'crash', not {on_other_thread!r}")
        super().__init__(horizon=horizon)
        self.on_other_thread = on_other_thread

    def _client(self):
        global _CLIENT
        if _CLIENT is None:
            _CLIENT = ThreadBoundClient(self.on_other_thread)
        return _CLIENT

    def reset(self, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        self._client().render(obs["goal"])
        return obs, info

    def step(self, action):
        self._client().render(action)
        return super().step(action)


def thread_bound_clicker(on_other_thread="raise", horizon=8):
    """Factory of :class:`ThreadBoundClicker`."""
    return ThreadBoundClicker(on_other_thread=on_other_thread, horizon=horizon)


def click_policy(obs, rng):
    """A policy of its arguments only: a random button, from lockstep's generator."""
    return f"click('b{int(rng.integers(0, Clicker.BUTTONS))}')"


def miniwob_policy(obs, rng):
    """A MiniWoB agent for BrowserGym's observations (no browsergym import): clicks the
    element whose name the goal quotes, else focuses a textbox when the goal asks for one,
    else clicks the first button, by its BrowserGym id (``click("13")``). ``rng`` is unused:
    these tasks have one right action."""
    import re

    nodes = (obs.get("axtree_object") or {}).get("nodes", [])
    goal = str(obs.get("goal", ""))
    quoted = re.findall(r'"([^"]+)"', goal)

    def bid(pred):
        for n in nodes:
            role = (n.get("role") or {}).get("value")
            name = (n.get("name") or {}).get("value")
            if "browsergym_id" in n and pred(role, name):
                return n["browsergym_id"]
        return None

    found = None
    if quoted:
        found = bid(lambda role, name: name in quoted and role in ("button", "link", "checkbox", "radio"))
    if found is None and "textbox" in goal.lower():
        found = bid(lambda role, name: role == "textbox")
    if found is None:
        found = bid(lambda role, name: role == "button")
    return f'click("{found}")' if found is not None else "noop()"


def impure_policy(obs, rng):
    """A policy that reads the process-global RNG: not a function of its arguments."""
    return f"click('b{random.randrange(Clicker.BUTTONS)}')"


def clicker(bug=None, horizon=8):
    """Factory of :class:`Clicker` (text actions, BrowserGym's observation shapes)."""
    return Clicker(bug=bug, horizon=horizon)


def courier(bug=None, horizon=40):
    """Factory of :class:`Courier` (Dict/Tuple/Sequence actions, Sequence observations)."""
    return Courier(bug=bug, horizon=horizon)


def mission_walker(bug=None, horizon=60):
    """Factory of :class:`MissionWalker` (a Text observation)."""
    return MissionWalker(bug=bug, horizon=horizon)


def graph_walker():
    """A walker whose observation is a Graph space, which the protocol cannot carry."""
    env = Walker()
    env.observation_space = spaces.Graph(spaces.Box(0, 1, (2,)), None)
    return env


def walker(bug=None, horizon=60):
    """Factory for ``python -m lockstep_adapter factory lockstep_adapter.testing:walker``."""
    return Walker(bug=bug, horizon=horizon)


def walker_state(env):
    """A contracted state for ``--state``: the walk's own variables and RNG."""
    u = env.unwrapped
    return {
        "pos": u.pos,
        "t": u.t,
        "tick": u.tick,
        "rng": u.np_random.bit_generator.state,
    }


walker_state.lockstep_fields = ["pos", "rng", "t", "tick"]


def walker_vector(bug=None, num_envs=2, horizon=10):
    """``num_envs`` walkers in a ``gymnasium.vector.SyncVectorEnv``, as a training loop holds
    them (serve with ``factory lockstep_adapter.testing:walker_vector``): with
    ``bug="unseeded_global_rng"`` a sub-env reset after its episode ended (no seed) draws its
    start from numpy's global RNG, so it no longer replays a single walker of its seed from its
    second episode on."""
    from gymnasium.vector import SyncVectorEnv

    # Sub-env i's episodes last horizon + i steps, so the sub-envs do not all end at once.
    return SyncVectorEnv([lambda i=i: Walker(bug=bug, horizon=horizon + i) for i in range(num_envs)])

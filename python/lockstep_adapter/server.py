"""The lockstep/1 and lockstep/2 request loop over a Gymnasium or PettingZoo env.

The protocol owns the process's real standard output: before anything else runs, file
descriptor 1 is duplicated for the protocol and then pointed at standard error, so a ``print``
in the environment (or in C code it calls) lands in lockstep's stderr capture instead of
corrupting the stream.
"""

import json
import os
import sys
import traceback
import warnings

from . import attributes, causes, drivers, instances, layers, wire
from .wire import PROTOCOL, PROTOCOL_V2


def claim_stdout():
    """Returns a binary stream on the original stdout and sends fd 1 and ``sys.stdout`` to
    stderr."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _safe_rng(obj):
    """An object's own RNG, read without triggering a lazy property that would create one."""
    attrs = getattr(obj, "__dict__", {})
    for name in ("_np_random", "np_random"):
        if name in attrs:
            return wire.rng_state(attrs[name])
    return None


class Served:
    """One environment behind the protocol: a uniform multi-agent view."""

    kind = ""

    def __init__(self, env, env_id, config, fields=None, state_fn=None, contract=None, exclude=(), driver=None):
        self.env = env
        # A policy or an action script (:mod:`.drivers`) in place of lockstep's sampled actions.
        self.driver = driver
        if driver is not None:
            if self.kind != "gymnasium":
                raise ValueError("--policy and --actions drive a single-agent Gymnasium env")
            config = dict(config or {}, **driver.config())
        self.env_id = env_id
        self.config = config
        self.fields = list(fields or [])
        self.state_fn = state_fn
        # Attributes left out of the inferred state (`--exclude`, or a contract's "exclude"),
        # each for a reason the user gives: a render buffer, a wall-clock stamp.
        contract = dict(contract) if contract else None
        self.exclude = frozenset(list(exclude or ()) + list((contract or {}).pop("exclude", None) or ()))
        self.contract = contract or None
        # An env without randomness may declare it (attribute `lockstep_seedless = True` on the
        # unwrapped env, or the adapter's --seedless): the handshake says `"seedless": true`.
        self.seedless = bool(getattr(getattr(env, "unwrapped", env), "lockstep_seedless", False))
        # lockstep draws the actions from its own sampler, so it never seeds the env's spaces:
        # an env whose step samples its own action space (a scripted opponent) is then as
        # random under lockstep as in a training loop, which seeds nothing but the reset.
        # `--seed-spaces` opts in, and says so in the handshake's config.
        self.seed_spaces = False
        self.agents = sorted(self._action_spaces())
        self.action_spaces = self._action_spaces()
        self.obs_spaces = self._observation_spaces()
        self.obs_encoders = {}
        self.action_decoders = {}
        for a in self.agents:
            # A space the protocol cannot carry is one line naming the space and the agent.
            try:
                self.obs_encoders[a] = wire.ObservationEncoder(self.obs_spaces[a])
                for key, leaf in wire.observation_keys(self.obs_spaces[a]).items():
                    wire.declare_space(leaf)
            except wire.WireError as exc:
                raise wire.WireError(f"agent {a!r}: observation: {exc}") from None
            if driver is not None:
                continue  # its actions come from the driver, whatever the space
            try:
                self.action_decoders[a] = wire.ActionDecoder(self.action_spaces[a])
                wire.declare_space(self.action_spaces[a])
            except wire.WireError as exc:
                hint = " (a text action space needs --policy MODULE:FUNCTION or --actions FILE)" if wire._space_kind(self.action_spaces[a]) == "Text" else ""
                raise wire.WireError(f"agent {a!r}: action: {exc}{hint}") from None
        self.agent_names = {a: json.dumps(a) for a in self.agents}
        if _recording:
            causes.add_env_roots(env)  # so that an effect's line is the env's, not a library's
        # The source tracer (:mod:`.causes`), on only while lockstep asks: it re-runs a failed
        # scenario with it to name the line of the env's code that read a nondeterministic
        # source. Off, a call costs nothing more.
        self.tracer = None
        self._drain = getattr(self.unwrapped(), "lockstep_drain_logs", None)
        # A browser the env drives, read by lockstep over DevTools (:mod:`.layers`).
        self.layer_names = layers.names(env)
        # The Playwright objects a BrowserGym env holds are read as its browser layer, not as
        # attributes (their internals count requests and hold greenlets).
        self._layer_excludes = frozenset(layers.replaced_attributes(env))
        self.exclude = self.exclude | self._layer_excludes
        # State paths already reported as skipped (said once per path).
        self._said_skipped = set()

    # Subclasses provide these.
    def _action_spaces(self):
        raise NotImplementedError

    def _observation_spaces(self):
        raise NotImplementedError

    def reset(self, seed, options):
        """``seed`` is an int, or ``None`` for the unseeded ``reset()`` a training loop calls
        after its first episode."""
        raise NotImplementedError

    def _seed_action_spaces(self, seed):
        if self.seed_spaces and seed is not None:
            for a in self.agents:
                self.action_spaces[a].seed(seed)

    def step(self, actions):
        raise NotImplementedError

    def unwrapped(self):
        return getattr(self.env, "unwrapped", self.env)

    def logs(self):
        """New log lines: an env may define ``lockstep_drain_logs()`` returning a list of str."""
        if self._drain is None:
            return "[]"
        return wire.dumps([str(line) for line in self._drain()])

    def handshake(self):
        fields = self.declared_fields()
        contract = {"name": f"lockstep-adapter/{self.kind}/{self.env_id}", "version": 1}
        if fields is not None:
            contract["fields"] = fields
        contract.update(self.contract or {})
        return {
            "protocol": PROTOCOL,
            "ok": True,
            "env_id": f"{self.kind}:{self.env_id}",
            "config": self.config,
            "agents": [
                {
                    "name": a,
                    "action_space": drivers.PLACEHOLDER_SPACE if self.driver is not None else wire.declare_space(self.action_spaces[a]),
                    "observation_space": {
                        k: wire.declare_space(sp) for k, sp in sorted(wire.observation_keys(self.obs_spaces[a]).items())
                    },
                }
                for a in self.agents
            ],
            "contract": contract,
            # lockstep/2: several instances of this env in this process (docs/protocol.md).
            "upgrades": [PROTOCOL_V2],
            # lockstep/2 can run an instance on a thread of its own (when its create asks, and the
            # upgrade granted threads), so requests to such instances may be in flight at once,
            # answered as they finish; every other instance runs on the main thread.
            "threads": True,
            # lockstep/2's fork op (the forked-workers check) needs os.fork (Unix).
            "fork": hasattr(os, "fork"),
            # An env without randomness says so (docs/replay.md): its other-seed check is then
            # not applicable. Declared by the env object or by `--seedless`.
            "seedless": bool(self.seedless),
            # The source tracer and the effects recorder (docs/protocol.md, "Causes").
            "tracer": True,
            # What ran it: Python's and the imported distributions' versions (op `provenance`).
            "provenance": True,
            # Layers lockstep reads itself, where each state answer says (:mod:`.layers`).
            **({"layers": self.layer_names} if self.layer_names else {}),
        }

    def declared_fields(self):
        """The state's fields as the handshake declares them; ``None`` when lockstep infers
        them: every attribute of the unwrapped env (:mod:`.attributes`), the default."""
        if self.state_fn is not None:
            declared = getattr(self.state_fn, "lockstep_fields", None)
            return sorted(self.fields or declared or [])
        named = self._named_fields()
        return None if named is None else sorted(named)

    def _named_fields(self):
        """The attributes a contract names (``--fields`` or a contract's ``fields``), or
        ``None`` for the inferred default."""
        if self.fields:
            return sorted(set(["action_space_rng", "np_random"] + self.fields))
        if self.contract and self.contract.get("fields"):
            return list(self.contract["fields"])
        return None

    def state(self):
        if self.state_fn is not None:
            return wire.to_json(self.state_fn(self.env))
        env = self.unwrapped()
        spaces_rng = {a: _safe_rng(self.action_spaces[a]) for a in self.agents}
        named = self._named_fields()
        if named is None:
            unused = []
            out = attributes.inferred_state(env, self.exclude, unused)
            if "/action_space_rng" not in self.exclude and "action_space_rng" not in self.exclude:
                out["action_space_rng"] = spaces_rng
            else:
                unused = [u for u in unused if u != "/action_space_rng"]
            self._say_unused(unused)
            return out
        skipped = {}
        out = {}
        for name in named:
            if name == "np_random":
                out[name] = _safe_rng(env)
            elif name == "action_space_rng":
                out[name] = spaces_rng
            else:
                out.update(attributes.named_state(env, [name], skipped, self.exclude))
        for path, why in skipped.items():
            if path not in self._said_skipped:
                self._said_skipped.add(path)
                sys.stderr.write(f"lockstep_adapter: state {path} ({why}) has no inspectable state; skipped\n")
        return out

    def _say_unused(self, unused):
        """An exclusion that leaves nothing out is a typo or a wrong name: said once each."""
        for pattern in unused:
            if pattern not in self._said_skipped and pattern not in self._layer_excludes:
                self._said_skipped.add(pattern)
                sys.stderr.write(f"lockstep_adapter: --exclude {pattern} matches no attribute; nothing left out for it\n")

    def close(self):
        close = getattr(self.env, "close", None)
        if close is not None:
            close()

    def transition(self, obs, rewards, terms, truncs, infos, agents):
        parts = []
        for a in agents:
            info = infos.get(a) if infos else None
            info_text = "{}" if not info else wire.dumps(wire.to_json(info))
            parts.append(
                '%s:{"obs":%s,%s,"terminated":%s,"truncated":%s,"info":%s}'
                % (
                    self.agent_names[a] if a in self.agent_names else json.dumps(a),
                    self.obs_encoders[a].encode(obs[a]),
                    wire.reward_fields(rewards.get(a, 0.0) if rewards else 0.0),
                    "true" if terms and terms.get(a) else "false",
                    "true" if truncs and truncs.get(a) else "false",
                    info_text,
                )
            )
        return '{"ok":true,"agents":{' + ",".join(parts) + '},"logs":' + self.logs() + "}"


class GymnasiumServed(Served):
    """A single-agent Gymnasium env: one agent named ``agent``."""

    kind = "gymnasium"
    AGENT = "agent"

    def _action_spaces(self):
        return {self.AGENT: self.env.action_space}

    def _observation_spaces(self):
        return {self.AGENT: self.env.observation_space}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.driver is None:
            self._decode = self.action_decoders[self.AGENT].decode
        else:
            self._decode = self._driven
        self._encode = self.obs_encoders[self.AGENT].encode
        self._last_obs = None

    def _driven(self, _placeholder):
        return self.driver.action(self._last_obs)

    def reset(self, seed, options):
        obs, info = self.env.reset(seed=seed, options=options or None)
        self._seed_action_spaces(seed)
        if self.driver is not None:
            self.driver.reset(seed, self.AGENT)
            self._last_obs = obs
        return self.transition({self.AGENT: obs}, None, None, None, {self.AGENT: info}, self.agents)

    def step(self, actions):
        # The hot path of a single-agent env: one string build, no per-step dicts.
        obs, reward, terminated, truncated, info = self.env.step(self._decode(actions[self.AGENT]))
        if self.driver is not None:
            self._last_obs = obs
        return (
            '{"ok":true,"agents":{"agent":{"obs":'
            + self._encode(obs)
            + ","
            + wire.reward_fields(reward)
            + (',"terminated":true' if terminated else ',"terminated":false')
            + (',"truncated":true' if truncated else ',"truncated":false')
            + ',"info":'
            + ("{}" if not info else wire.dumps(wire.to_json(info)))
            + '}},"logs":'
            + self.logs()
            + "}"
        )


class ParallelServed(Served):
    """A PettingZoo parallel env: its ``possible_agents``."""

    kind = "pettingzoo"

    def _action_spaces(self):
        return {a: self.env.action_space(a) for a in self.env.possible_agents}

    def _observation_spaces(self):
        return {a: self.env.observation_space(a) for a in self.env.possible_agents}

    def reset(self, seed, options):
        # No options unless lockstep was given some: an env (PettingZoo's wrappers, the range)
        # may warn about every key it does not know.
        obs, infos = self.env.reset(seed=seed, options=options or None)
        self._seed_action_spaces(seed)
        return self.transition(obs, None, None, None, infos, sorted(obs))

    def step(self, actions):
        decoded = {a: self.action_decoders[a].decode(act) for a, act in actions.items()}
        obs, rewards, terms, truncs, infos = self.env.step(decoded)
        return self.transition(obs, rewards, terms, truncs, infos, sorted(obs))


class AECServed(Served):
    """A PettingZoo AEC (turn-based) env: its ``possible_agents``, one acting at a time.

    Each transition holds the agent whose turn it is (its observation, with its action mask,
    and the reward it gathered since its last turn), so lockstep sends that agent's action
    only. Agents whose episode ended are stepped with ``None`` as PettingZoo requires, and the
    transition that ends the game holds every agent, each terminated or truncated.
    """

    kind = "pettingzoo"

    def _action_spaces(self):
        return {a: self.env.action_space(a) for a in self.env.possible_agents}

    def _observation_spaces(self):
        return {a: self.env.observation_space(a) for a in self.env.possible_agents}

    def _turn(self):
        env = self.env
        ended = {}
        while env.agents:
            agent = env.agent_selection
            obs, reward, term, trunc, info = env.last()
            if not (term or trunc):
                break
            ended[agent] = (obs, reward, term, trunc, info)
            env.step(None)
        if env.agents:
            agent = env.agent_selection
            ended[agent] = env.last()
        elif not ended:
            raise ValueError("the AEC env has no agent left and reported no end")
        agents = sorted(ended)
        obs = {a: ended[a][0] for a in agents}
        rewards = {a: ended[a][1] for a in agents}
        terms = {a: ended[a][2] for a in agents}
        truncs = {a: ended[a][3] for a in agents}
        infos = {a: ended[a][4] for a in agents}
        return self.transition(obs, rewards, terms, truncs, infos, agents)

    def reset(self, seed, options):
        self.env.reset(seed=seed, options=options or None)
        self._seed_action_spaces(seed)
        return self._turn()

    def step(self, actions):
        agent = self.env.agent_selection
        if agent not in actions:
            raise ValueError(f"it is {agent!r}'s turn; actions were given for {sorted(actions)}")
        self.env.step(self.action_decoders[agent].decode(actions[agent]))
        return self._turn()


_error = instances.error_reply


def _start_failure(exc):
    """The handshake that says the env could not be built: the error and its traceback (none
    for a space the protocol cannot carry: that error is one line naming the agent and space)."""
    hello = {"protocol": PROTOCOL, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if not isinstance(exc, wire.WireError):
        hello["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return hello


def answer(served, op, request, effects_since=0):
    """One env request (reset, step, state, and the tracer's trace, sources, effects) to one
    instance: the reply text without its id. Every reset and step is watched by the effects
    recorder; while the tracer is on, each runs under it too."""
    if op in ("step", "reset"):
        if op == "step":
            call, args = served.step, (request["actions"],)
        else:
            call, args = served.reset, (request["seed"], request.get("options"))
        # Effects inside are recorded as this op's (the recorder watches this function's
        # frames: see _watch_requests), at no cost per call.
        if served.tracer is None:
            reply = call(*args)
        else:
            reply = served.tracer.call(op, call, *args)
        if served.layer_names and _recording:
            # A browser launched by this call is the env's layer: its effects are told apart.
            layers.note(served.env)
        return reply
    if op == "state":
        state = served.state()
        where = layers.current(served.env) if served.layer_names else None
        if where and isinstance(state, dict):
            # The layer is read in place of an attribute of its name (BrowserGym's `browser`).
            state = {k: v for k, v in state.items() if k not in where}
            return '{"ok":true,"state":' + wire.dumps(state) + ',"layers":' + wire.dumps(where) + "}"
        return '{"ok":true,"state":' + wire.dumps(state) + "}"
    if op == "trace":
        on = request.get("on")
        if type(on) is not bool:
            raise ValueError("trace needs \"on\": true or false")
        served.tracer = causes.SourceTracer(served.unwrapped()) if on else None
        return '{"ok":true}'
    if op == "sources":
        found = served.tracer.drain() if served.tracer is not None else []
        return '{"ok":true,"sources":' + wire.dumps(wire.to_json(found)) + "}"
    if op == "effects":
        # Process-wide: what every instance of this process touched since it started (or,
        # in a caller's process, since ``effects_since``).
        if not effects_recorded():
            return '{"ok":true,"effects":null}'
        found = layers.attribute_effects(causes.effects_recorder().since(effects_since))
        return '{"ok":true,"effects":' + wire.dumps(wire.to_json(found)) + "}"
    if op == "provenance":
        return '{"ok":true,"provenance":' + wire.dumps(provenance()) + "}"
    raise ValueError(f"unknown op {op!r}")


def provenance():
    """What ran the env (issue 30 item 7): Python's version and implementation, and the
    version of every installed distribution whose modules this process has imported (the env's
    own and its libraries'; in a caller's process, everything it imported). Asked once per
    trial: reading the installed distributions takes a tenth of a second."""
    import importlib.metadata as metadata
    import platform

    tops = {name.partition(".")[0] for name, module in list(sys.modules.items()) if module is not None}
    owners = metadata.packages_distributions()
    packages = {}
    for top in sorted(tops):
        for dist in owners.get(top, ()):
            try:
                packages[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    found = {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "packages": dict(sorted(packages.items())),
    }
    browsers = layers.browser_versions()
    if browsers:
        found["browsers"] = browsers
    return found


def _request_phase(frame):
    """The phase of an :func:`answer` frame: its ``op`` when a reset or a step."""
    op = frame.f_locals.get("op")
    return op if op in ("reset", "step") else None


#: Set by lockstep for the processes whose effects it reads (a trial's own child, `contract
#: infer`): the audit hook is installed only there. Once installed it cannot be removed, and
#: every audited event of the interpreter (each ``id()``, ``sys._getframe``, ``copy.deepcopy``'s
#: many ``id()`` calls) then calls it, so the fresh processes of the other checks go without.
EFFECTS_VAR = "LOCKSTEP_EFFECTS"

_recording = False


def record_effects():
    """Installs the effects recorder and watches :func:`answer`'s frames: a reset or step it
    answers is that phase, at no cost per call (only an audited event looks up the stack)."""
    global _recording
    if not _recording:
        causes.effects_recorder().watch(answer.__code__, _request_phase)
        _recording = True
    return causes.effects_recorder()


def effects_recorded():
    return _recording


def watched_make(make):
    """``make()`` watched by the effects recorder, when it records: what building the env
    touches counts."""
    if not _recording:
        return make()
    with causes.effects_recorder().during("make"):
        return make()


def serve(make, out=None, inp=None):
    """Runs the request loop. ``make()`` returns a :class:`Served`; a failure there is answered
    with a handshake that says ``ok: false``.

    The loop speaks lockstep/1 until lockstep asks for ``upgrade`` to lockstep/2, answering on
    this thread. From then on every env request names its ``instance`` (0 is the env the
    handshake describes), ``create`` makes one more with ``make()``, ``close`` ends one
    instance, end of input ends them all. Every instance runs on this (the main) thread,
    except one whose ``create`` asks for ``"thread": true`` when the upgrade asked for
    ``"threads": true`` (:mod:`lockstep_adapter.instances`): it runs on a thread of its own,
    so requests to such instances run at once and are answered as they finish.
    """
    out = out if out is not None else claim_stdout()
    inp = inp if inp is not None else sys.stdin.buffer
    sender = instances.Sender(out)

    if os.environ.get(EFFECTS_VAR) == "1":
        record_effects()
    try:
        served = watched_make(make)
        hello = served.handshake()
    except BaseException as exc:  # noqa: BLE001 - reported to the client, then exit
        # The traceback travels in the handshake (lockstep lays it out as lines), not on
        # stderr as well, so that it is shown once.
        sender.send(wire.dumps(_start_failure(exc)))
        return 1
    sender.send(wire.dumps(hello))
    loop = _Loop(make, served, sender)
    while True:
        code = loop.handle(inp.readline())
        if code is not None:
            return code


class _Loop:
    """Routes request lines: lockstep/1 ones to the single env on this thread, lockstep/2 ones
    to the instance they name (through its pool), and the requests outside any instance."""

    def __init__(self, make, served, sender):
        self.make = make
        self.served = served
        self.sender = sender
        self.pool = None  # the instances, from the upgrade on
        self.in_fork = False
        self.created = 0

    def handle(self, line):
        """Answers or routes one request line; an exit code at end of input (or lockstep/1's
        close), else ``None``."""
        if not line:
            if self.pool is None:
                self.served.close()
            else:
                self.pool.close_all()
            return 0
        rid = "null"
        try:
            request = json.loads(line)
            if type(request.get("id")) is int:
                rid = str(request["id"])
            op = request["op"]
            if op == "upgrade":
                reply = self._upgrade(request)
            elif op == "fork":
                # The fork answers this request and serves the next ones on the same pipes
                # until end_fork; this process waits for it meanwhile and sends nothing.
                if self.pool is None or not hasattr(os, "fork"):
                    raise ValueError("fork needs lockstep/2 on a system with os.fork")
                pid = _fork(self.pool, self.sender)
                if pid != 0:
                    os.waitpid(pid, 0)
                    return None
                self.in_fork = True
                reply = '{"ok":true,"pid":%d}' % os.getpid()
            elif op == "end_fork":
                if not self.in_fork:
                    raise ValueError("end_fork outside a forked worker")
                self.pool.wait_idle()
                self.sender.send('{"id":%s,"ok":true}' % rid)
                sys.stderr.flush()
                os._exit(0)
            elif op == "create":
                if self.pool is None:
                    raise ValueError("create needs lockstep/2 (send upgrade first)")
                self.created += 1
                number = self.created

                own = self.pool.add(number, own_thread=request.get("thread") is True)

                def build(instance, make=self.make, own=own):
                    # Built on the thread every later call of it runs on.
                    instance.served = watched_make(make)
                    return '{"ok":true,"instance":%d,"thread":%s}' % (instance.number, "true" if own else "false")

                self.pool.submit(number, rid, build)
                return None
            elif self.pool is None:
                # lockstep/1: one instance, answered on this thread.
                if op == "close":
                    self.served.close()
                    self.sender.send('{"id":%s,"ok":true}' % rid)
                    return 0
                reply = answer(self.served, op, request)
            else:
                number = request["instance"]
                if number not in self.pool.instances:
                    raise ValueError(f"no instance {number!r}")
                if op == "close":
                    self.pool.submit(number, rid, _close)
                    self.pool.remove(number)
                    return None

                def call(instance, op=op, request=request):
                    if instance.served is None:
                        raise ValueError(f"instance {instance.number} could not be created")
                    return answer(instance.served, op, request)

                self.pool.submit(number, rid, call)
                return None
        except Exception as exc:  # noqa: BLE001 - every env failure is answered, not fatal
            reply = _error(exc)
        self.sender.reply(rid, reply)
        return None

    def _upgrade(self, request):
        if request.get("protocol") != PROTOCOL_V2:
            raise ValueError(f"cannot upgrade to {request.get('protocol')!r}")
        if self.pool is None:
            # Threads only when lockstep asks (it then sends requests to different instances
            # without waiting), and only for the instances it creates with "thread": true.
            self.pool = instances.Pool(self.sender, threads=request.get("threads") is True)
            self.pool.add(0, self.served)
        threads = "true" if self.pool.threads else "false"
        return '{"ok":true,"protocol":%s,"threads":%s}' % (json.dumps(PROTOCOL_V2), threads)


def _close(instance):
    served, instance.served = instance.served, None
    if served is not None:
        served.close()
    return '{"ok":true}'


def _fork(pool, sender):
    """Forks once every instance is idle and no answer is being written: in the fork only
    this thread survives, so no lock may be held by another thread at that moment (the
    reason Python 3.12 warns about fork in a threaded process; the warning is silenced here
    because that condition holds). In the fork every other instance gets a new thread."""
    pool.wait_idle()
    sys.stderr.flush()
    with sender.lock:
        sender.out.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    if pid == 0:
        pool.after_fork()
    return pid


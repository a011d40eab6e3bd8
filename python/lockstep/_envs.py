"""Turns what a caller names as an env into factories lockstep can drive.

An env is named by a zero-argument callable returning a Gymnasium env or a PettingZoo env
(parallel or AEC), a ``"module:function"`` string, a Gymnasium id (``"CartPole-v1"``) or a
range name (``"range:ransomware:easy"``). Each gives:

- ``make()``: a fresh :class:`InProcess`, the env wrapped in ``lockstep_adapter``'s ``Served``
  (the code that serves it to a child process), answering with the protocol's messages;
- ``argv``: the command serving the same env in a fresh interpreter (``python -m
  lockstep_adapter ...``) for the process check, or ``None`` with ``skip_reason`` when the env
  cannot be made again by name (a lambda, a local function, an object of ``__main__``).
"""

import importlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

from ._errors import ConfigError

ADAPTER = [sys.executable, "-m", "lockstep_adapter"]


def _load(spec):
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"expected module:function, got {spec!r}")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def as_parallel(env):
    """A PettingZoo AEC env as a parallel one; any other env as it is."""
    if hasattr(env, "agent_iter") and hasattr(env, "possible_agents"):
        from pettingzoo.utils.conversions import aec_to_parallel

        return aec_to_parallel(env)
    return env


def make_named(target, **kwargs):
    """``module:function`` called with ``kwargs``, an AEC env converted to parallel: the
    factory the process check serves with ``lockstep_adapter factory``."""
    return as_parallel(_load(target)(**kwargs))


def make_range(name):
    """The range env of a range name, as a PettingZoo parallel env."""
    from .range import RangeParallelEnv

    return RangeParallelEnv(name)


class InProcess:
    """One env behind the protocol's messages, in this interpreter (what crates/python reads
    with the protocol's own parsers). Every request is answered by the adapter's own
    :func:`lockstep_adapter.server.answer`, so the source tracer and the effects recorder work
    here as in a served child; effects count from ``effects_since`` (this env's making), not
    from whatever the caller's process did before."""

    def __init__(self, served, effects_since=0):
        self.served = served
        self.effects_since = effects_since

    def _answer(self, op, request):
        from lockstep_adapter import server

        return server.answer(self.served, op, request, self.effects_since)

    def hello(self):
        from lockstep_adapter import wire

        return wire.dumps(self.served.handshake())

    def reset(self, seed, options_text):
        return self._answer("reset", {"seed": seed, "options": json.loads(options_text)})

    def step(self, request_text):
        return self._answer("step", {"actions": json.loads(request_text)["actions"]})

    def state(self):
        return self._answer("state", {})

    def trace(self, on):
        return self._answer("trace", {"on": bool(on)})

    def sources(self):
        return self._answer("sources", {})

    def effects(self):
        return self._answer("effects", {})

    def provenance(self):
        return self._answer("provenance", {})

    def close(self):
        self.served.close()
        return ""


def _served(env, env_id, config, contract, driver=None):
    from lockstep_adapter import server

    env = as_parallel(env)
    cls = server.ParallelServed if hasattr(env, "possible_agents") else server.GymnasiumServed
    return cls(env, env_id, config, None, None, contract, driver=driver)


@dataclass
class Source:
    """How to make an env here, and how to serve it in a fresh interpreter."""

    env_id: str
    make_env: Callable[[], Any]
    argv: Optional[List[str]]
    skip_reason: Optional[str]
    config: dict
    contract: Optional[dict] = None
    child_env: List[Tuple[str, str]] = field(default_factory=list)
    #: ``(name, function)`` of the policy that chooses the actions (``lockstep.check(policy=)``).
    policy: Optional[Tuple[str, Callable]] = None

    def make(self):
        from lockstep_adapter import server

        since = server.record_effects().mark()
        env = server.watched_make(self.make_env)
        driver = None
        if self.policy is not None:
            from lockstep_adapter import drivers

            driver = drivers.PolicyDriver(*self.policy)
        return InProcess(_served(env, self.env_id, self.config, self.contract, driver), since)


def _importable_name(fn):
    """``module:qualname`` when ``fn`` can be imported again by that name, else ``None`` and
    why not."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname:
        return None, f"{fn!r} has no module-level name"
    if "<" in qualname:
        what = "a lambda" if "<lambda>" in qualname else "defined inside a function"
        return None, f"{module}.{qualname} is {what}: a fresh interpreter cannot import it"
    if module == "__main__":
        return None, f"{qualname} lives in __main__, which a fresh interpreter does not run"
    try:
        found = _load(f"{module}:{qualname}")
    except Exception as exc:  # noqa: BLE001 - any failure means: not importable
        return None, f"{module}:{qualname} cannot be imported again ({type(exc).__name__}: {exc})"
    if found is not fn:
        return None, f"{module}:{qualname} imports as another object"
    return f"{module}:{qualname}", None


def _policy(policy):
    """``(name, function)`` of a policy given as ``"module:function"`` or as a function a fresh
    interpreter can import by name (the fresh-process checks drive it there)."""
    if policy is None:
        return None
    if isinstance(policy, str):
        return policy, _load(policy)
    name, why = _importable_name(policy)
    if name is None:
        raise ConfigError(f"policy: {why}; give a module-level function or a 'module:function' string")
    return name, policy


def resolve(env, contract=None, policy=None):
    """The :class:`Source` of ``env`` (see the module doc), driven by ``policy`` when given."""
    source = _resolve(env, contract)
    source.policy = _policy(policy)
    if source.policy is not None:
        if source.argv is not None:
            source.argv = source.argv + ["--policy", source.policy[0]]
    return source


def _resolve(env, contract=None):
    contract_args = ["--contract", json.dumps(contract)] if contract else []
    child_env = [("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))]
    if isinstance(env, str):
        if env.startswith("range:"):
            kwargs = {"name": env}
            argv = ADAPTER + ["factory", "lockstep._envs:make_range", "--kwargs", json.dumps(kwargs)] + contract_args
            config = {"adapter": "factory", "target": "lockstep._envs:make_range", "kwargs": kwargs}
            return Source(env, lambda: make_range(env), argv, None, config, contract, child_env)
        if ":" in env:
            target = env
            _load(target)  # fail now, with the import error, rather than in every trial
            kwargs = {"target": target}
            argv = ADAPTER + ["factory", "lockstep._envs:make_named", "--kwargs", json.dumps(kwargs)] + contract_args
            config = {"adapter": "factory", "target": "lockstep._envs:make_named", "kwargs": kwargs}
            return Source(env, lambda: make_named(target), argv, None, config, contract, child_env)
        import gymnasium

        gym_id = env
        gymnasium.spec(gym_id)  # an unknown id fails here
        argv = ADAPTER + ["gymnasium", gym_id] + contract_args
        config = {"adapter": "gymnasium", "target": gym_id, "kwargs": {}}
        return Source(env, lambda: gymnasium.make(gym_id), argv, None, config, contract, child_env)
    # A class is a factory too; an env object (callable or not) is refused below.
    if callable(env) and (isinstance(env, type) or not hasattr(env, "step")):
        name, why = _importable_name(env)
        if name is None:
            label = getattr(env, "__qualname__", None) or repr(env)
            config = {"adapter": "callable", "target": label, "kwargs": {}}
            return Source(label, env, None, why, config, contract, child_env)
        kwargs = {"target": name}
        argv = ADAPTER + ["factory", "lockstep._envs:make_named", "--kwargs", json.dumps(kwargs)] + contract_args
        config = {"adapter": "factory", "target": "lockstep._envs:make_named", "kwargs": kwargs}
        return Source(name, lambda: as_parallel(env()), argv, None, config, contract, child_env)
    raise ConfigError(
        f"env {env!r}: give a zero-argument callable that makes a fresh env, a 'module:function' string, "
        "a Gymnasium id or a range name (checks need several fresh instances, not one env object)"
    )

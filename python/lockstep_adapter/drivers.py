"""Actions for spaces where lockstep's random sample means nothing (issue 30 item 2).

A web agent's env takes text (``click("a12")``, BrowserGym's ``Unicode`` action space): a
uniformly random string is not an action. Two ways to drive it, each chosen on the adapter's
command line and recorded in the handshake's ``config`` (so the report and every golden say
how the episode was driven):

- ``--policy MODULE:FUNCTION``: ``FUNCTION(observation, rng)`` returns the action, where
  ``rng`` is a numpy ``Generator`` seeded from the reset's seed (an unseeded reset goes on with
  the same generator, as the env's own RNG does). The policy is part of the episode: it must
  depend on nothing but its arguments. Every action is computed twice from the same
  observation and generator state, and two different actions are an error naming the step,
  never a silent pass. Recorded with the SHA-256 of the function's source.
- ``--actions FILE``: a JSON-lines script, line k the action of step k (JSON: a string, a
  number, a list). Recorded with the file's SHA-256 and length; a step past its end is an error.

The agent's action space is then declared to lockstep as ``Discrete(1)``: lockstep's sampler
sends 0, which the adapter replaces with the driver's action.
"""

import copy
import hashlib
import inspect
import json
import zlib

import numpy as np

from .wire import WireError, to_json

#: What the handshake declares for a driven agent's action space.
PLACEHOLDER_SPACE = {"type": "discrete", "n": 1, "start": 0}


def _same(a, b):
    try:
        return json.dumps(to_json(a), sort_keys=True) == json.dumps(to_json(b), sort_keys=True)
    except (TypeError, ValueError):
        return repr(a) == repr(b)


class PolicyDriver:
    """``FUNCTION(observation, rng)`` per step (see the module doc)."""

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = repr(fn)
        self.digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
        self.rng = None
        self.step = 0

    def config(self):
        return {"policy": {"name": self.name, "sha256": self.digest}}

    def reset(self, seed, agent):
        if seed is not None or self.rng is None:
            # The agent's name in the seed: two driven agents draw apart.
            entropy = [0 if seed is None else int(seed), zlib.crc32(agent.encode("utf-8"))]
            self.rng = np.random.default_rng(np.random.SeedSequence(entropy))
        self.step = 0

    def action(self, obs):
        self.step += 1
        twin = copy.deepcopy(self.rng)
        first = self.fn(obs, self.rng)
        again = self.fn(obs, twin)
        if not _same(first, again):
            raise WireError(
                f"policy {self.name} gave two actions for the same observation and generator at step "
                f"{self.step} ({first!r}, then {again!r}): it depends on something besides its arguments "
                "(a global RNG, the clock, its own state), so the episode cannot replay"
            )
        return first


class ScriptDriver:
    """The actions of a JSON-lines file, one per step (see the module doc)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            data = f.read()
        self.digest = hashlib.sha256(data).hexdigest()
        self.actions = []
        for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                self.actions.append(json.loads(line))
            except ValueError as exc:
                raise WireError(f"{path}:{number}: not JSON: {exc}") from None
        if not self.actions:
            raise WireError(f"{path}: no action in the script")
        self.step = 0

    def config(self):
        return {"actions": {"file": self.path, "sha256": self.digest, "steps": len(self.actions)}}

    def reset(self, seed, agent):
        self.step = 0

    def action(self, obs):
        self.step += 1
        if self.step > len(self.actions):
            raise WireError(f"{self.path} scripts {len(self.actions)} steps; step {self.step} has no action")
        return self.actions[self.step - 1]

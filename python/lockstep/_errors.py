"""The exceptions lockstep raises for bad input and failed environments.

Every class derives from :class:`LockstepError`; each also derives from the built-in exception
that the same mistake raises elsewhere in Python, so ``except ValueError`` keeps working.
"""

import operator


class LockstepError(Exception):
    """Base class of every error lockstep raises on purpose."""


class CanonicalError(LockstepError, ValueError):
    """A value has no canonical JSON form in the profile asked for (the message names its JSON
    Pointer): a numpy scalar or array, a non-``str`` dict key, NaN under ``jcs``..."""


class ConfigError(LockstepError, ValueError):
    """Bad arguments: an unknown profile, scenario, preset, check or parameter."""


def count(name, value, least, why=""):
    """``value`` as an int of at least ``least``, or a ConfigError in the CLI's words (the
    command line's counts, crates/cli/src/counts.rs): a rollout of 0 steps checks nothing, and
    a negative one is no number lockstep can send."""
    try:
        n = operator.index(value)
    except TypeError:
        n = None
    if n is None or isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, at least {least}; got {value!r}")
    if n < least or n > 2**64 - 1:
        raise ConfigError(f"{name} must be a whole number from {least} to 2^64 - 1{why}; got {n}")
    return n


class EnvError(LockstepError, RuntimeError):
    """An environment failed: it raised, broke the protocol, or could not be made."""


class GoldenError(LockstepError, ValueError):
    """A golden file could not be read, parsed or recorded."""


__all__ = ["LockstepError", "CanonicalError", "ConfigError", "EnvError", "GoldenError"]

"""The exceptions lockstep raises for bad input and failed environments.

Every class derives from :class:`LockstepError`; each also derives from the built-in exception
that the same mistake raises elsewhere in Python, so ``except ValueError`` keeps working.
"""


class LockstepError(Exception):
    """Base class of every error lockstep raises on purpose."""


class CanonicalError(LockstepError, ValueError):
    """A value has no canonical JSON form in the profile asked for (the message names its JSON
    Pointer): a numpy scalar or array, a non-``str`` dict key, NaN under ``jcs``..."""


class ConfigError(LockstepError, ValueError):
    """Bad arguments: an unknown profile, scenario, preset, check or parameter."""


class EnvError(LockstepError, RuntimeError):
    """An environment failed: it raised, broke the protocol, or could not be made."""


class GoldenError(LockstepError, ValueError):
    """A golden file could not be read, parsed or recorded."""


__all__ = ["LockstepError", "CanonicalError", "ConfigError", "EnvError", "GoldenError"]

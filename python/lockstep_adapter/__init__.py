"""Serve a Gymnasium or PettingZoo environment to lockstep over the lockstep/1 protocol.

Run ``python -m lockstep_adapter --help``; the protocol is specified in docs/protocol.md.
"""

# Defined here, not imported from .wire, so that the standard-library-only fixtures
# (lockstep_adapter.faults) run without numpy.
PROTOCOL = "lockstep/1"
# Offered in the handshake's `upgrades`: several env instances in one process.
PROTOCOL_V2 = "lockstep/2"

__all__ = ["PROTOCOL", "PROTOCOL_V2"]
__version__ = "0.1.0"

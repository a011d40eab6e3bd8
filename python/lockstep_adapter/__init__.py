"""Serve a Gymnasium or PettingZoo environment to lockstep over the lockstep/1 protocol.

Run ``python -m lockstep_adapter --help``; the protocol is specified in docs/protocol.md.
"""

from .wire import PROTOCOL

__all__ = ["PROTOCOL"]
__version__ = "0.1.0"

"""Serve a Gymnasium or PettingZoo environment to lockstep over the lockstep/1 and lockstep/2
protocols.

Run ``python -m lockstep_adapter --help``; the protocol is specified in docs/protocol.md.

The pieces that turn an env into protocol messages are plain module-level names, importable
in-process (the ``lockstep`` package may call them without a child process):

- ``lockstep_adapter.server``: ``GymnasiumServed``, ``ParallelServed``, ``AECServed`` (one env
  behind the protocol: ``handshake()``, ``reset(seed, options)`` and ``step(actions)``, which
  return the reply's JSON text without its ``id``, ``state()``, ``close()``); ``serve(make,
  out, inp)`` the request loop; ``claim_stdout()``.
- ``lockstep_adapter.instances``: the instances of a lockstep/2 child (``Pool``): on the main
  thread, or each on a thread of its own when its ``create`` asks for ``"thread": true`` (the
  parallel check's) and the upgrade granted ``"threads"``.
- ``lockstep_adapter.__main__``: ``make_served(args)`` builds a ``Served`` from
  ``parse_args(argv)`` (the command line's kinds: gymnasium, pettingzoo, factory).
- ``lockstep_adapter.wire``: ``declare_space``, ``observation_keys``, ``ObservationEncoder``,
  ``ActionDecoder``, ``wire_array``/``decode_array`` (arrays as dtype, shape and base64 of the
  little-endian bytes), ``reward_fields``, ``to_json`` (infos), ``rng_state``.
- ``lockstep_adapter.attributes``: the env's attributes as its starting state (the default
  contract, and the fields a contract names): ``inferred_state``, ``attribute_state``.
- ``lockstep_adapter.testing``: deliberately faulty envs; ``lockstep_adapter.faults``: a raw
  server that breaks the protocol on purpose.
"""

# Defined here, not imported from .wire, so that the standard-library-only fixtures
# (lockstep_adapter.faults) run without numpy.
PROTOCOL = "lockstep/1"
# Offered in the handshake's `upgrades`: several env instances in one process.
PROTOCOL_V2 = "lockstep/2"

__all__ = ["PROTOCOL", "PROTOCOL_V2"]
__version__ = "0.1.0"

"""Command line: ``python -m lockstep_adapter {gymnasium,gymnasium-vector,pettingzoo,factory} ...``."""

import argparse
import importlib
import json
import os
import sys

from . import drivers, server, vector


def _register_namespace(env_id):
    """Imports the module that registers ``env_id``'s namespace when Gymnasium does not know it
    yet: ``browsergym/miniwob.click-test`` is registered by importing ``browsergym.miniwob``,
    which nothing imports unless the id says ``browsergym.miniwob:browsergym/miniwob.click-test``.
    Tries ``NS.FIRST`` (the id's first dotted part) then ``NS``; when neither registers it, the
    error names the ``module:id`` form."""
    if ":" in env_id or "/" not in env_id:
        return
    import gymnasium

    namespace, name = env_id.split("/", 1)
    if namespace in {spec.namespace for spec in gymnasium.registry.values()}:
        return
    candidates = ([f"{namespace}.{name.split('.', 1)[0]}"] if "." in name else []) + [namespace]
    tried = []
    for module in candidates:
        try:
            importlib.import_module(module.replace("-", "_"))
        except ImportError as exc:
            tried.append(f"{module} ({exc})")
            continue
        if namespace in {spec.namespace for spec in gymnasium.registry.values()}:
            return
        tried.append(f"{module} (imported, registered nothing in {namespace!r})")
    raise ValueError(
        f"gymnasium id {env_id!r}: namespace {namespace!r} is not registered, and importing "
        f"{' or '.join(tried)} did not register it; name the module that registers it as "
        f"MODULE:{env_id} (e.g. {candidates[0]}:{env_id})"
    )


def _load(spec):
    """``module:attr`` -> the object."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"expected module:function, got {spec!r}")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m lockstep_adapter",
        description="Serve an environment to lockstep over the lockstep/1 protocol (stdin/stdout).",
    )
    p.add_argument("kind", choices=["gymnasium", "gymnasium-vector", "pettingzoo", "factory"])
    p.add_argument(
        "target",
        help="gymnasium, gymnasium-vector: env id; pettingzoo: module; factory: module:function "
        "(returning a Gymnasium env, a Gymnasium vector env or a PettingZoo env)",
    )
    p.add_argument("--num-envs", type=int, default=4, help="gymnasium-vector: sub-envs (default 4)")
    p.add_argument(
        "--vectorization-mode",
        default=None,
        choices=["sync", "async", "vector_entry_point"],
        help="gymnasium-vector: gymnasium.make_vec's vectorization_mode (default: Gymnasium's own "
        "choice, the env's vector entry point when it has one, else sync)",
    )
    p.add_argument(
        "--twin",
        action="store_true",
        help="a vector env: serve its sub-envs as single envs driven as the vector env promises "
        "(the reference of lockstep's vector check, which adds this flag itself)",
    )
    p.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the env")
    p.add_argument(
        "--policy",
        help="module:function(observation, rng) returning each action, for action spaces where a random "
        "sample means nothing (text); rng is a numpy Generator seeded from the reset's seed",
    )
    p.add_argument("--actions", help="a JSON-lines file: line k is the action of step k")
    p.add_argument("--state", help="module:function(env) returning the contracted state (a dict)")
    p.add_argument("--fields", default="", help="comma-separated state fields: attributes of the unwrapped env read by the default state, or the declared fields of --state")
    p.add_argument("--contract", help='JSON {"name", "version", "fields"} overriding the declared reset contract')
    p.add_argument(
        "--exclude",
        default="",
        help="comma-separated attributes of the unwrapped env left out of the default state (every other "
        "attribute is the starting state lockstep fingerprints), or pointers into them with * for any "
        "one segment (/world/agents/*/action); say why in your notes",
    )
    p.add_argument(
        "--seedless",
        action="store_true",
        help="declare that the env has no randomness: lockstep reports its other-seed check as not applicable",
    )
    p.add_argument(
        "--seed-spaces",
        action="store_true",
        help="seed the env's action spaces with the reset's seed (off: lockstep samples its own actions, "
        "and a training loop seeds no space; recorded in the handshake's config)",
    )
    return p.parse_args(argv)


def make_served(args):
    served = _make_served(args)
    if args.seedless:
        served.seedless = True
    if args.seed_spaces:
        served.seed_spaces = True
        served.config = dict(served.config, seed_spaces=True)
    return served


def _make_served(args):
    kwargs = json.loads(args.kwargs)
    if not isinstance(kwargs, dict):
        raise ValueError("--kwargs must be a JSON object")
    fields = [f for f in args.fields.split(",") if f]
    state_fn = _load(args.state) if args.state else None
    contract = json.loads(args.contract) if args.contract else None
    opts = {
        "fields": fields,
        "state_fn": state_fn,
        "contract": contract,
        "exclude": [f for f in args.exclude.split(",") if f],
    }
    if args.policy and args.actions:
        raise ValueError("give --policy or --actions, not both")
    if args.policy:
        opts["driver"] = drivers.PolicyDriver(args.policy, _load(args.policy))
    elif args.actions:
        opts["driver"] = drivers.ScriptDriver(os.path.abspath(args.actions))
    config = {"adapter": args.kind, "target": args.target, "kwargs": kwargs}
    if args.kind in ("gymnasium", "gymnasium-vector"):
        _register_namespace(args.target)
    if args.kind == "gymnasium":
        import gymnasium

        env = gymnasium.make(args.target, **kwargs)
        return server.GymnasiumServed(env, args.target, config, **opts)
    if args.kind == "gymnasium-vector":
        import gymnasium

        if args.num_envs < 1:
            raise ValueError(f"--num-envs must be at least 1, got {args.num_envs}")
        if args.vectorization_mode is not None:
            config = dict(config, vectorization_mode=args.vectorization_mode)
        if args.twin:
            twins = [gymnasium.make(args.target, **kwargs) for _ in range(args.num_envs)]
            return vector.TwinServed(twins, args.target, dict(config, twin=True), **opts)
        env = gymnasium.make_vec(args.target, num_envs=args.num_envs, vectorization_mode=args.vectorization_mode, **kwargs)
        # What Gymnasium picked when the mode was left to it.
        config = dict(config, vector_class=type(env.unwrapped).__name__)
        return vector.VectorServed(env, args.target, config, **opts)
    if args.kind == "pettingzoo":
        module = importlib.import_module(args.target)
        if hasattr(module, "parallel_env"):
            env = module.parallel_env(**kwargs)
            return server.ParallelServed(env, args.target, config, **opts)
        # Turn-based (AEC) only, e.g. pettingzoo.classic.tictactoe_v3.
        env = module.env(**kwargs)
        return server.AECServed(env, args.target, config, **opts)
    env = _load(args.target)(**kwargs)
    if _is_vector(env):
        if args.twin:
            fns = getattr(env, "env_fns", None)
            if not fns:
                raise ValueError(
                    f"{args.target} returned a {type(env).__name__} without env_fns: its sub-envs cannot be made one by one"
                )
            twins = [fn() for fn in fns]
            env.close()
            return vector.TwinServed(twins, args.target, dict(config, twin=True), **opts)
        return vector.VectorServed(env, args.target, config, **opts)
    return _served_class(env)(env, args.target, config, **opts)


def _is_vector(env):
    try:
        from gymnasium.vector import VectorEnv
    except ImportError:
        return False
    return isinstance(env, VectorEnv)


def _served_class(env):
    """Gymnasium, PettingZoo parallel or PettingZoo AEC, by what the env object is."""
    if not hasattr(env, "possible_agents"):
        return server.GymnasiumServed
    try:
        from pettingzoo import AECEnv, ParallelEnv
    except ImportError:
        return server.ParallelServed
    # The object itself decides: a parallel wrapper of an AEC env (aec_to_parallel) unwraps to
    # the AEC env, but speaks the parallel API.
    if isinstance(env, ParallelEnv):
        return server.ParallelServed
    return server.AECServed if isinstance(env, AECEnv) else server.ParallelServed


def main(argv=None):
    proto = server.claim_stdout()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return server.serve(lambda: make_served(args), out=proto)


if __name__ == "__main__":
    sys.exit(main())

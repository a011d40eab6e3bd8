"""Env-steps per CPU-second of lockstep.range stepped from Python with precomputed actions.

    python python/bench/range_steps.py [--scenario ransomware] [--steps 20000]

Actions are drawn before the clock starts (uniform over the action space, from numpy's
seeded Generator), so the figure is the env and its Python bindings alone: reset + step +
building the numpy observations and info dicts. CPU time (``time.process_time``), not wall
time, because the machine is shared. The last line is the figure.
"""

import argparse
import time

import numpy as np

import lockstep.range


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", default="ransomware")
    p.add_argument("--preset", default=None)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    env = lockstep.range.parallel_env(args.scenario, preset=args.preset)
    rng = np.random.default_rng(args.seed)
    agents = env.possible_agents
    nvec = {a: env.action_space(a).nvec for a in agents}
    actions = [{a: rng.integers(0, nvec[a]) for a in agents} for _ in range(args.steps)]
    env.reset(seed=args.seed)
    episodes = 1
    start = time.process_time()
    for i in range(args.steps):
        env.step(actions[i])
        if not env.agents:
            env.reset(seed=args.seed + episodes)
            episodes += 1
    cpu = time.process_time() - start
    print(f"scenario {args.scenario} preset {args.preset} steps {args.steps} episodes {episodes} cpu {cpu:.3f}s")
    print(f"{args.steps / cpu:.0f} env-steps per CPU-second")


if __name__ == "__main__":
    main()

"""AIS of single valleys of the robot-arm posterior against the number of temperatures: the
valleys of one search (``valleys.find_minima``, merged modulo the symmetries), the heaviest
by Laplace mass, each annealed from its moment-matched Gaussian to the posterior
(``valleys.ais_valleys``) with T temperatures; ln Z_v + ln |G v| per valley and T. AIS
underestimates ln Z_v in expectation, so a value that still rises with T was short.

    python benchmarks/valley_ais_temperatures.py --hidden 8 --valleys 3 --temperatures 2000 8000
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
from bench_evidence import robot_arm

from bnnsweep.engines.evidence import valleys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--valleys", type=int, default=3, help="the heaviest by Laplace mass")
    parser.add_argument("--temperatures", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--particles", type=int, default=64)
    args = parser.parse_args()
    target, _ = robot_arm(args.hidden)
    search = valleys.ValleySettings()
    rng = np.random.default_rng([args.seed, 7])
    w, e, g, a, _ = valleys.find_minima(target, search, rng)
    found = valleys.distinct_valleys(valleys.symmetry_of(target), w, e, g, a, search)
    found = sorted(found, key=lambda v: -v.laplace_log_mass)[: args.valleys]
    for T in args.temperatures:
        started = time.process_time()
        chosen = [copy.deepcopy(v) for v in found]
        settings = valleys.ValleySettings(temperatures=T, particles=args.particles, groups=8)
        valleys.ais_valleys(target, chosen, settings, np.random.default_rng([args.seed, T]))
        for i, v in enumerate(chosen):
            print(f"H = {args.hidden} valley {i} T = {T}: ln Z_v + ln |G v| "
                  f"{v.log_mass + np.log(v.orbit):.2f} +- {v.log_mass_se:.2f}, ESS {v.ess:.1f} "
                  f"of {args.particles}, Laplace {v.laplace_log_mass + np.log(v.orbit):.2f}",
                  flush=True)  # fmt: skip
        print(f"  {time.process_time() - started:.0f} s CPU", flush=True)


if __name__ == "__main__":
    main()

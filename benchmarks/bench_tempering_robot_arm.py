"""Benchmark: parallel tempering with stepping stone (``engines.evidence.tempering``) on the
robot-arm evidence, the target built as the ``chaining`` method builds it (its default
settings: tanh units, grouped prior with Neal's hyperpriors, alpha and beta integrated out,
``MarginalModel``), for several H and seeds.

Prints per H and seed: ln Z (stepping stone), its reported s.e. (jackknife over the replicate
ladders), TI on the same ladder, the minimum swap acceptance, round trips per ladder, the
status and its reason, gradient evaluations and CPU seconds; then per H the mean, the s.d.
over seeds and the mean reported s.e. For comparison (issue 33): the valley-sum lower bound
ln p(D) >= 156.0 at H = 4 and >= 465-467 at H = 8; Laplace 162.2 at H = 4; the paper's ratio
estimate ~471 at H = 8.

Run: nice -n 10 python benchmarks/bench_tempering_robot_arm.py [--hidden 1 2 4 8]
     [--seeds 0 1 2] [--rungs 32] [--replicates 4] [--burn-in 1000] [--samples 2000]
     [--leapfrog 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bnnsweep import datasets
from bnnsweep.engines.evidence.tempering import TemperingSettings, estimate
from bnnsweep.methods import get_method
from bnnsweep.models.marginal import MarginalModel


def robot_arm_target(hidden: int) -> MarginalModel:
    """The chaining method's target at its defaults, ``hidden`` tanh units."""
    split = datasets.load("robot_arm").split("default")
    settings = get_method("chaining").settings({"hidden": hidden, "activation": "tanh"})
    objective, noise = settings.build(split)
    return MarginalModel(objective, noise)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    defaults = TemperingSettings()
    for name in ("rungs", "replicates", "burn_in", "samples", "leapfrog"):
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=int, default=getattr(defaults, name))
    parser.add_argument("--step-size", type=float, default=defaults.step_size)
    args = parser.parse_args()
    settings = TemperingSettings(
        rungs=args.rungs, replicates=args.replicates, burn_in=args.burn_in,
        samples=args.samples, leapfrog=args.leapfrog, step_size=args.step_size,
    )  # fmt: skip
    print(f"robot_arm, tempering {settings}")
    for hidden in args.hidden:
        target = robot_arm_target(hidden)
        rows = []
        for seed in args.seeds:
            start = time.process_time()
            est = estimate(target, settings, np.random.default_rng([hidden, seed]))
            cpu = time.process_time() - start
            d = est.diagnostics
            rows.append((est.log_z, est.log_z_se))
            print(
                f"H={hidden} W={target.objective.network.n_weights} seed={seed}: "
                f"ln Z {est.log_z:.2f} +- {est.log_z_se:.2f}  TI {d['log_z_ti']:.2f} "
                f"+- {d['log_z_ti_se']:.2f}  swap min {d['swap_accept_min']:.2f}  "
                f"round trips {np.asarray(d['round_trips']).tolist()}  barrier "
                f"{d['barrier']:.1f}  {est.n_grad_evals / 1e6:.1f} M grads  {cpu:.0f} s CPU  "
                f"{est.status} {est.reason}",
                flush=True,
            )
        values, ses = np.array(rows).T
        spread = values.std(ddof=1) if len(values) > 1 else float("nan")
        print(
            f"H={hidden}: mean {values.mean():.2f}, s.d. over seeds {spread:.2f}, "
            f"mean reported s.e. {ses.mean():.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

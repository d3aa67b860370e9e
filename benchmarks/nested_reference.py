"""Nested sampling from the valleys' reference (``nested`` with ``coordinates: reference``),
or on the target with the output layer integrated out (``--coordinates collapsed``), on a
known-answer problem or the robot arm (chaining's target, tanh units, Neal's
hyperpriors), one estimate per seed with its runs, volume error, KL(posterior || reference),
ln P and CPU time:

    python benchmarks/nested_reference.py robot_arm_h4 --seeds 0 1 --reference tempered
    python benchmarks/nested_reference.py mixture --seeds 0 1 2 3 4 --live 100 --replicates 2 --inner 3 --starts 128
    python benchmarks/nested_reference.py robot_arm_h4 --coordinates collapsed --live 300

Long: at H = 4 one seed costs 1,200-2,300 s of CPU (200 live points x 4 runs, 10 x dim
slice steps).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

from bnnsweep.engines.evidence import known_answers, nested  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", help="robot_arm_hH or a known-answer problem")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--live", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=4)
    parser.add_argument("--inner", type=float, default=10.0, help="slice steps / dimension")
    parser.add_argument("--starts", type=int, default=256)
    parser.add_argument("--dof", type=float, default=3.0)
    parser.add_argument("--reference", default="search", choices=("search", "tempered"))
    parser.add_argument("--coordinates", default="reference", choices=("reference", "collapsed"))
    args = parser.parse_args()
    if args.problem.startswith("robot_arm_h"):
        target, _ = robot_arm(int(args.problem.removeprefix("robot_arm_h")))
        truth = None
    else:
        problem = known_answers.problem(args.problem)
        target, truth = problem.target, problem.log_z
    settings = nested.NestedSettings(
        live=args.live, replicates=args.replicates, inner_steps=args.inner,
        coordinates=args.coordinates, reference_dof=args.dof, reference=args.reference,
        search={"starts": args.starts},
    )  # fmt: skip
    for seed in args.seeds:
        started = time.process_time()
        out = nested.estimate(target, settings, np.random.default_rng(seed), log=print)
        d = out.diagnostics
        error = "" if truth is None else (
            f" error {out.log_z - truth:+.3f} ({(out.log_z - truth) / out.log_z_se:+.1f} s.e.)"
        )  # fmt: skip
        print(
            f"{args.problem} seed {seed}: {out.log_z:.3f} +- {out.log_z_se:.3f}{error} "
            f"{out.status}; runs {np.round(d['log_z_replicates'], 3)}, volume error "
            f"{d['se_volume']:.3f}, KL {d['information']:.2f}, ln P {d['log_offset']:.3f}, "
            f"{out.n_grad_evals / 1e6:.1f} M evaluations, {time.process_time() - started:.0f} s CPU",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""``valley_tempering`` on the robot arm's collapsed target (chaining's ``target:
collapsed``: W2, b2 integrated out exactly), one estimate per seed with its status, TI,
round trips and CPU, then importance sampling from the run's final reference (no Markov
chain; Gaussian components, and Student-t with 3 degrees of freedom): an estimate whose
expectation lies below ln p(D) whatever the reference, so a check on the tempering that
shares its reference but not its chains:

    python benchmarks/collapsed_tempering.py --hidden 4 --seeds 0 1 2

Long: a seed at H = 4 takes 4-6 minutes of CPU (256 starts, 24 rungs x 8 ladders), the
importance sampling 35 s per 10^6 draws.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

from bnnsweep.engines.evidence import valley_tempering as vt  # noqa: E402
from bnnsweep.models.collapsed import CollapsedModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="valley_tempering settings over the defaults (e.g. samples=6400)")  # fmt: skip
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    full, settings = robot_arm(args.hidden)
    target = CollapsedModel(full.objective, full.noise_prior)
    protocol = replace(settings.valley_tempering_settings(), **overrides)
    for seed in args.seeds:
        started = time.process_time()
        rng = np.random.default_rng(seed)
        out, res = vt.estimate_and_run(target, protocol, rng)
        d = out.diagnostics
        print(f"H = {args.hidden} seed {seed}: {out.log_z:.3f} +- {out.log_z_se:.3f} "
              f"{out.status} {out.reason or ''} | TI {d['log_z_ti']:.2f} | round trips "
              f"{np.min(d['round_trips']):.0f}-{np.max(d['round_trips']):.0f} per ladder | swap "
              f"min {d['swap_accept_min']:.2f} | valleys {d['n_components']} (kept "
              f"{d['n_kept_components']}) | {time.process_time() - started:.0f} s CPU",
              flush=True)  # fmt: skip
        order = np.argsort(-d["top_occupancy"])[:8]
        print(f"  heaviest valleys' lambda = 1 occupancy {np.round(d['top_occupancy'][order], 3)}"
              f", starts that found each {d['top_hits'][order]}; share of single-start "
              f"valleys {d['singleton_share']:.3f}", flush=True)  # fmt: skip
        if res is None:
            continue
        for dof in (np.inf, 3.0):
            value, se, ess = vt.reference_importance(
                target, replace(res.reference, dof=dof), args.draws, rng
            )
            print(f"  importance sampling from its final reference (dof {dof:g}): "
                  f"{value:.3f} +- {se:.3f}, ESS {ess:.0f} of {args.draws}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

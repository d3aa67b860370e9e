"""Does ``valley_smc``'s last pass equilibrate? Its passes at the defaults (importance check
off), then from the final reference refitted once more (``valley_smc.refitted``) one more
pass at the defaults and one with more MCMC (``--more``: overrides, default ``ess_target``
0.8 and 30 moves a stage), on the robot arm's collapsed target:

    python benchmarks/valley_smc_last_pass.py --hidden 8 --seed 0

SMC's Z is unbiased whatever the kernel; if the particles did not equilibrate within a
stage, the spread of ln Z over runs understates the error and more MCMC moves the estimate.
Robot arm H = 8, seed 0 (docs/evidence.md): 481.957 +- 0.126 at the defaults, 482.041 +-
0.065 with ``ess_target`` 0.8 and 30 moves.
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

from bnnsweep.engines.evidence import valley_smc as smc  # noqa: E402
from bnnsweep.models.collapsed import CollapsedModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--more", nargs="*", default=["ess_target=0.8", "moves=30"],
                        metavar="KEY=VALUE")  # fmt: skip
    args = parser.parse_args()
    more = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.more)}
    full, _ = robot_arm(args.hidden)
    target = CollapsedModel(full.objective, full.noise_prior)
    settings = smc.ValleySMCSettings(check_draws=0)
    out, res = smc.estimate_and_run(target, settings, np.random.default_rng([args.seed, 7]))
    passes = " ".join(f"{z:.2f}" for z in out.diagnostics["log_z_passes"])
    print(f"H = {args.hidden} seed {args.seed}: {out.log_z:.3f} +- {out.log_z_se:.3f} "
          f"{out.status} | passes {passes}", flush=True)  # fmt: skip
    ref = smc.refitted(target, res, settings.tempering_settings())
    for name, s in [("defaults", settings), (str(more), replace(settings, **more))]:
        started = time.process_time()
        run = smc.run_valley_smc(target, ref, s, np.random.default_rng([args.seed, 11]))
        e = smc.estimate_from_run(run, s)
        runs = " ".join(f"{z:.2f}" for z in e.diagnostics["log_z_runs"])
        print(f"  one more pass, {name}: {e.log_z:.3f} +- {e.log_z_se:.3f} {e.status} | "
              f"stages {len(run.ladder) - 1} | acceptance min {np.min(run.acceptance):.2f} "
              f"mean {np.mean(run.acceptance):.2f} | runs {runs} | "
              f"{time.process_time() - started:.0f} s CPU", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

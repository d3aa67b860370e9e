"""``valley_smc`` (resample-move SMC from the valleys' reference) on the robot arm, one
estimate per seed with its runs, stages, coverage and CPU:

    python benchmarks/valley_smc.py --hidden 4 --seeds 0 1 --target collapsed

Each estimate ends with its importance check (``check_draws`` draws from the final
reference, a stochastic lower bound). ``--set KEY=VALUE`` overrides a ``ValleySMCSettings``
default (e.g. ``--set particles=512``; ``"search={starts: 512}"``). The second estimator beside ``valley_tempering``
(``benchmarks/collapsed_tempering.py``): the same reference family, no ladder of exchanging
chains, valleys weighted equally rather than by the posterior's occupancy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

from bnnsweep.engines.evidence import valley_smc  # noqa: E402
from bnnsweep.models.collapsed import CollapsedModel  # noqa: E402


def tempering_line(d: dict) -> str:
    """``tempering_check``'s line: valley_tempering from the SMC's final reference."""
    return (f"  valley_tempering from the SMC's final reference: {d['log_z_tempering']:.3f} +- "
            f"{d['log_z_tempering_se']:.3f} {d['tempering_status']} {d['tempering_reason']} | "
            f"TI {d['tempering_log_z_ti']:.2f} | round trips per ladder "
            f"{d['tempering_round_trips']:.1f} | swap acceptance min "
            f"{d['tempering_swap_accept_min']:.2f} | drift {d['tempering_log_z_drift']:+.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--target", default="collapsed", choices=("full", "collapsed"))
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--verbose", action="store_true", help="print the passes as they go")
    parser.add_argument(
        "--tempering", action="store_true",
        help="with tempering_check: valley_tempering from the SMC's final reference refitted "
        "to its particles (its protocol: --set \"tempering={samples: 4800}\")",
    )  # fmt: skip
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    if args.tempering:
        overrides["tempering_check"] = True
    full, _ = robot_arm(args.hidden)
    target = full
    if args.target == "collapsed":
        target = CollapsedModel(full.objective, full.noise_prior)
    settings = valley_smc.ValleySMCSettings(**overrides)
    values, ses = [], []
    for seed in args.seeds:
        started = time.process_time()
        rng = np.random.default_rng([seed, 7])
        log = print if args.verbose else None
        out, res = valley_smc.estimate_and_run(target, settings, rng, log=log)
        d = out.diagnostics
        values.append(out.log_z)
        ses.append(out.log_z_se)
        runs = " ".join(f"{z:.2f}" for z in d["log_z_runs"])
        print(f"H = {args.hidden} {args.target} seed {seed}: {out.log_z:.3f} +- "
              f"{out.log_z_se:.3f} {out.status} {out.reason} | runs {runs} | stages "
              f"{d['stages']} ({d['stages_all_passes']} in all passes) | acceptance min {d['acceptance_min']:.2f} | valleys "
              f"{d['n_components']}, new {d['n_new_valleys']} holding "
              f"{d['new_valley_share']:.1%}, single-start {d['singleton_share']:.1%} | "
              f"passes {' '.join(f'{z:.2f}' for z in d['log_z_passes'])} | "
              f"prior's label {d['prior_occupancy']:.2f} | importance sampling from the "
              f"final reference {d.get('log_z_importance', np.nan):.3f} +- "
              f"{d.get('log_z_importance_se', np.nan):.3f} (ESS {d.get('importance_ess', 0):.0f}) | "
              f"{out.n_grad_evals / 1e6:.1f} M gradients | {time.process_time() - started:.0f} s CPU",
              flush=True)  # fmt: skip
        if "log_z_tempering" in d:
            print(tempering_line(d), flush=True)
    if len(values) > 1:
        print(f"mean {np.mean(values):.3f}, s.d. over seeds {np.std(values, ddof=1):.3f}, "
              f"mean reported s.e. {np.mean(ses):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

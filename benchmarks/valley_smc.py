"""``valley_smc`` (resample-move SMC from the valleys' reference) on the robot arm, one
estimate per seed with its runs, stages, coverage and CPU:

    python benchmarks/valley_smc.py --hidden 4 --seeds 0 1 --target collapsed

``--set KEY=VALUE`` overrides a ``ValleySMCSettings`` default (e.g. ``--set particles=512``;
``"search={starts: 512}"``). The second estimator beside ``valley_tempering``
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
from bnnsweep.engines.evidence import valley_tempering as vt  # noqa: E402
from bnnsweep.engines.evidence import valleys as valley_search  # noqa: E402
from bnnsweep.models.collapsed import CollapsedModel  # noqa: E402


def importance_line(target, settings, res, draws: int, rng) -> str:
    """Importance sampling from the last pass's reference refitted once more to its final
    particles (``refit_components``, weights from their occupancy)."""
    vts = settings.tempering_settings()
    symmetry = valley_search.symmetry_of(target)
    ref = res.reference
    labels = res.labels.ravel()
    occupancy = np.bincount(labels, minlength=len(ref.log_weights)) / labels.size
    ref = ref.with_weights(np.log(vt.adapted_weights(ref, occupancy, vts)))
    ref = vt.refit_components(
        symmetry, ref, res.particles.reshape(-1, res.particles.shape[-1]), vts
    )
    started = time.process_time()
    value, se, ess = vt.reference_importance(target, ref, draws, rng)
    return (
        f"  importance sampling from the refitted reference, {draws} draws: {value:.3f} +- "
        f"{se:.3f}, ESS {ess:.0f} ({time.process_time() - started:.0f} s CPU)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--target", default="collapsed", choices=("full", "collapsed"))
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--importance",
        type=int,
        default=0,
        metavar="N",
        help="N draws of importance sampling from the last pass's reference refitted to its "
        "particles: a stochastic lower bound with no Markov chain (vt.reference_importance)",
    )
    parser.add_argument("--verbose", action="store_true", help="print the passes as they go")
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    full, _ = robot_arm(args.hidden)
    target = full
    if args.target == "collapsed":
        target = CollapsedModel(full.objective, full.noise_prior)
    settings = valley_smc.ValleySMCSettings(**overrides)
    values, ses = [], []
    for seed in args.seeds:
        started = time.process_time()
        rng = np.random.default_rng([seed, 7])
        out, res = valley_smc.estimate_and_run(
            target, settings, rng, log=print if args.verbose else None
        )
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
              f"prior's label {d['prior_occupancy']:.2f} | "
              f"{out.n_grad_evals / 1e6:.1f} M gradients | {time.process_time() - started:.0f} s CPU",
              flush=True)  # fmt: skip
        if args.importance and res is not None:
            print(importance_line(target, settings, res, args.importance, rng), flush=True)
    if len(values) > 1:
        print(f"mean {np.mean(values):.3f}, s.d. over seeds {np.std(values, ddof=1):.3f}, "
              f"mean reported s.e. {np.mean(ses):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

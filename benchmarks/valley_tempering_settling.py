"""Does the tempering on ``valley_smc``'s reference settle, and where? ``valley_smc`` at its
defaults (importance check off), then ``valley_tempering`` from its final reference refitted
once more (``valley_smc.refitted``, as ``tempering_check`` does), with its chains started
from either end of the path: exact reference draws (``--start reference``, the lambda = 0
end in equilibrium, as the check does) or the SMC's final particles (``--start posterior``,
the lambda = 1 end):

    python benchmarks/valley_tempering_settling.py --hidden 8 --seed 0 --start reference \\
        --set "rungs=32" "samples=9600"

It prints the stepping stone of each of ``--segments`` consecutive parts of the kept
iterations (forward: link i from the draws at lambda_i; reverse: from those at
lambda_i+1), and which stretch of lambda the change between the first and the last part
comes from, and the mean of phi' at three rungs (at lambda = 1, E_1[phi'] = -KL(posterior ||
reference / P) + ln P - ln Z: it falls as the chains reach mass the reference misses).
Chains that settle give segments that agree; runs started from the two ends
that meet bracket the answer. The SMC run is cached (``--cache``), so that a second start
reuses it.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

from bnnsweep.engines.evidence import valley_smc as smc  # noqa: E402
from bnnsweep.engines.evidence import valley_tempering as vt  # noqa: E402
from bnnsweep.engines.evidence.estimators import log_mean_exp, ratio_estimate  # noqa: E402
from bnnsweep.models.collapsed import CollapsedModel  # noqa: E402


def smc_run(target, hidden: int, seed: int, cache: Path):
    """(SMC estimate, its final run) at the defaults, from ``cache`` when it is there."""
    path = cache / f"valley_smc_h{hidden}_s{seed}.pkl"
    if path.exists():
        with path.open("rb") as f:
            return pickle.load(f)
    settings = smc.ValleySMCSettings(check_draws=0)
    out, res = smc.estimate_and_run(target, settings, np.random.default_rng([seed, 7]))
    cache.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump((out, res), f)
    return out, res


def reverse_stepping_stone(ladder: np.ndarray, phi: np.ndarray) -> float:
    """ln Z = sum_i -ln mean exp(+(lambda_i+1 - lambda_i) phi) over the draws at lambda_i+1
    (``phi`` (L, R, S)): the stepping stone in the other direction."""
    d = np.diff(ladder)[:, None, None]
    return float(-sum(log_mean_exp(x) for x in d * phi[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", choices=("reference", "posterior"), default="reference")
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--stream", type=int, default=17, help="the tempering's stream [seed, S]")
    parser.add_argument("--set", nargs="*", default=["rungs=32", "samples=4800"],
                        metavar="KEY=VALUE", help="ValleyTemperingSettings overrides")  # fmt: skip
    parser.add_argument("--cache", type=Path, default=Path("benchmarks/results/cache"))
    args = parser.parse_args()
    full, _ = robot_arm(args.hidden)
    target = CollapsedModel(full.objective, full.noise_prior)
    started = time.process_time()
    out, res = smc_run(target, args.hidden, args.seed, args.cache)
    print(f"H = {args.hidden} seed {args.seed}: SMC {out.log_z:.3f} +- {out.log_z_se:.3f} "
          f"{out.status} ({time.process_time() - started:.0f} s CPU)", flush=True)  # fmt: skip
    overrides = {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in args.set)}
    settings = smc.ValleySMCSettings(tempering_check=True, tempering=overrides)
    protocol = settings.check_protocol()
    ref = smc.refitted(target, res, settings.tempering_settings())
    start = None
    if args.start == "posterior":
        order = np.random.default_rng([args.seed, 13]).permutation(res.labels.size)
        start = (res.particles.reshape(-1, res.particles.shape[-1])[order],
                 res.labels.ravel()[order])  # fmt: skip
    started = time.process_time()
    rng = np.random.default_rng([args.seed, args.stream])
    run = vt.run_valley_tempering(target, ref, protocol, rng, start=start)
    est = vt.estimate_from_valley_run(run, protocol)
    d = est.diagnostics
    print(f"  tempering from the {args.start} end, {protocol.rungs} rungs, {protocol.samples} "
          f"kept: {est.log_z:.3f} +- {est.log_z_se:.3f} {est.status} | TI "
          f"{d['log_z_ti']:.2f} | round trips {np.mean(d['round_trips']):.1f} | swap min "
          f"{d['swap_accept_min']:.2f} | {time.process_time() - started:.0f} s CPU",
          flush=True)  # fmt: skip
    ladder, phi = run.run.ladder, run.run.phi
    S = phi.shape[2]
    bounds = np.linspace(0, S, args.segments + 1).astype(int)
    links = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        part = ratio_estimate(ladder, phi[:, :, a:b])
        links.append(part.ln_ratio)
        print(f"  kept {a}-{b}: forward {part.log_z + run.log_fold:.3f} +- "
              f"{max(part.log_z_se, part.log_z_se_within):.3f} | reverse "
              f"{reverse_stepping_stone(ladder, phi[:, :, a:b]) + run.log_fold:.3f}",
              flush=True)  # fmt: skip
    rungs = [len(ladder) // 2, 3 * len(ladder) // 4, len(ladder) - 1]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        means = " ".join(f"lambda {ladder[i]:.3f}: {np.mean(phi[i, :, a:b]):.2f}" for i in rungs)
        print(f"  kept {a}-{b}: mean phi' at {means}", flush=True)
    change = links[-1] - links[0]
    for lo, hi in [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 0.9), (0.9, 1.0)]:
        inside = (ladder[:-1] >= lo) & (ladder[:-1] < hi)
        print(f"  last segment minus first, links from lambda in [{lo}, {hi}): "
              f"{change[inside].sum():+.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

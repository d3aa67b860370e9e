"""Every evidence estimator of the project on problems with known answers and on the robot
arm: bias against the truth (or the reference), spread over seeds, mean reported standard
error, gradient evaluations and CPU seconds per run.

    python benchmarks/bench_evidence.py                      # known answers + robot arm H = 4
    python benchmarks/bench_evidence.py --problems robot_arm_h8 --seeds 0 1 2 3 4
    python benchmarks/bench_evidence.py --estimators valleys tempering --problems mixture

Estimators: the chain's four (``ratio``, ``ti``, ``ais``, ``bdmc``: one paper-protocol-shaped
chain per seed gives all four), parallel tempering (``tempering``) and the valley sum
(``valleys``), nested sampling (``nested``; from the valleys' reference: ``nested_reference``,
and from the reference after valley_tempering's burn-in: ``nested_tempered``, 200 live points)
tempering from the valleys' reference (``valley_tempering``) and resample-move SMC from it
(``valley_smc``), and tempering from the SMC's final reference and particles
(``smc_tempering``: valley_smc's ``tempering_check`` as an estimate of its own), each also on
the robot arm's collapsed target
(``_collapsed``: W2, b2 integrated out exactly; the known-answer problems have no hidden layer
and are run as they are). On the robot arm the truth is unknown: the bias column is against
the mean of the reference estimator (``--reference``, default ``valley_smc_collapsed``,
chaining's default) over the same seeds.
Long: the robot arm at H = 8 costs minutes per estimator and seed on one core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bnnsweep import datasets
from bnnsweep.engines.evidence import (
    known_answers,
    nested,
    tempering,
    valley_smc,
    valley_tempering,
    valleys,
)
from bnnsweep.engines.evidence.chaining import ChainProtocol, run_chain
from bnnsweep.engines.evidence.estimators import bdmc_estimate
from bnnsweep.engines.evidence.result import EvidenceEstimate
from bnnsweep.engines.evidence.schedules import schedule
from bnnsweep.methods import get_method
from bnnsweep.models.collapsed import CollapsedModel
from bnnsweep.models.marginal import MarginalModel

CHAIN_ESTIMATORS = ("ratio", "ti", "ais", "bdmc")


def robot_arm(hidden: int):
    """The chaining target of the robot arm with the chaining method's defaults (tanh, Neal's
    hyperpriors of paper 001 sec. 5)."""
    split = datasets.load("robot_arm").split("default")
    settings = get_method("chaining").settings({"hidden": hidden, "activation": "tanh"})
    objective, noise = settings.build(split)
    return MarginalModel(objective, noise), settings


def problems(names):
    """name -> (target, truth or None, chain protocol, schedule)."""
    out = {}
    for name in names:
        if name.startswith("robot_arm_h"):
            target, s = robot_arm(int(name.removeprefix("robot_arm_h")))
            out[name] = (target, None, s.protocol(), s.schedule)
        else:
            p = known_answers.problem(name)
            proto = ChainProtocol(
                replicates=8, burn_in=100, burn_leapfrog=10, samples=200, leapfrog=10,
                step_size=p.step_size, ais_particles=256, ais_leapfrog=10, ais_substeps=5,
                ais_reverse=True,
            )  # fmt: skip
            out[name] = (p.target, p.log_z, proto, "power4_30")
    return out


def chain_estimates(target, proto, schedule_name, rng) -> dict[str, EvidenceEstimate]:
    res = run_chain(target, schedule(schedule_name), proto, rng)
    n = res.n_grad_evals
    found = {
        "ratio": EvidenceEstimate(res.log_z_ratio, res.log_z_ratio_se, n),
        "ti": EvidenceEstimate(res.log_z_ti, res.log_z_ti_se, n),
        "ais": EvidenceEstimate(res.log_z_ais, res.log_z_ais_se, n),
    }
    found["bdmc"] = EvidenceEstimate(
        *bdmc_estimate(
            res.log_z_ais, res.log_z_ais_se, res.log_z_ais_reverse, res.log_z_ais_reverse_se
        ),
        n,  # fmt: skip
    )
    return found


# the ladder of ``smc_tempering`` (valley_tempering from valley_smc's final reference, its
# chains started from the final particles), config/occam_robot_arm.yaml's: at H = 8 the
# middle rungs still relaxed through the first quarter of 4,800 kept iterations
SMC_TEMPERING = {"rungs": 32, "samples": 9600}


def run(estimator, target, proto, schedule_name, rng):
    if estimator.endswith("_collapsed"):
        estimator = estimator.removesuffix("_collapsed")
        if isinstance(target, MarginalModel):
            target = CollapsedModel(target.objective, target.noise_prior)
    if estimator == "valleys":
        return valleys.estimate(target, valleys.ValleySettings(), rng)
    if estimator == "tempering":
        return tempering.estimate(target, tempering.TemperingSettings(), rng)
    if estimator == "nested":
        return nested.estimate(target, nested.NestedSettings(), rng)
    if estimator in ("nested_reference", "nested_tempered"):
        kind = "search" if estimator == "nested_reference" else "tempered"
        settings = nested.NestedSettings(live=200, coordinates="reference", reference=kind)
        return nested.estimate(target, settings, rng, log=print)
    if estimator == "valley_tempering":
        return valley_tempering.estimate(
            target, valley_tempering.ValleyTemperingSettings(), rng, log=print
        )
    if estimator == "valley_smc":
        return valley_smc.estimate(target, valley_smc.ValleySMCSettings(), rng, log=print)
    if estimator == "smc_tempering":  # valley_smc's tempering_check as an estimate of its own
        settings = valley_smc.ValleySMCSettings(tempering_check=True, tempering=SMC_TEMPERING)
        d = valley_smc.estimate(target, settings, rng, log=print).diagnostics
        out = EvidenceEstimate(d["log_z_tempering"], d["log_z_tempering_se"], 0)
        if d["tempering_status"] != "ok":
            out.flag(d["tempering_status"], d["tempering_reason"])
        return out
    raise ValueError(estimator)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+",
                        default=[*known_answers.PROBLEMS, "robot_arm_h4"])  # fmt: skip
    parser.add_argument("--estimators", nargs="+",
                        default=[*CHAIN_ESTIMATORS, "tempering", "valleys", "nested",
                                 "valley_tempering_collapsed", "valley_smc_collapsed"])  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--reference", default="valley_smc_collapsed")
    args = parser.parse_args()
    header = (f"{'problem':>20} {'estimator':>26} {'mean':>10} {'bias':>8} {'sd':>7} "
              f"{'mean se':>8} {'within 3se':>10} {'grads':>10} {'cpu s':>8}")  # fmt: skip
    print(header)
    for name, (target, truth, proto, sched) in problems(args.problems).items():
        rows: dict[str, list] = {}
        for seed in args.seeds:
            wanted_chain = [e for e in args.estimators if e in CHAIN_ESTIMATORS]
            if wanted_chain:
                started = time.process_time()
                found = chain_estimates(target, proto, sched, np.random.default_rng([seed, 0]))
                cpu = time.process_time() - started
                for e in wanted_chain:
                    rows.setdefault(e, []).append((found[e], cpu))
            for e in args.estimators:
                if e in CHAIN_ESTIMATORS:
                    continue
                started = time.process_time()
                est = run(e, target, proto, sched, np.random.default_rng([seed, 1]))
                rows.setdefault(e, []).append((est, time.process_time() - started))
        ref = truth
        if ref is None and args.reference in rows:
            ref = float(np.mean([r.log_z for r, _ in rows[args.reference]]))
        for e, found in rows.items():
            z = np.array([r.log_z for r, _ in found])
            se = np.array([r.log_z_se for r, _ in found])
            hits = int(np.sum(np.abs(z - ref) <= 3 * se)) if ref is not None else -1
            bias = z.mean() - ref if ref is not None else float("nan")
            grads = np.mean([r.n_grad_evals for r, _ in found])
            cpu = np.mean([c for _, c in found])
            print(f"{name:>20} {e:>26} {z.mean():10.3f} {bias:8.3f} {z.std(ddof=1) if len(z) > 1 else float('nan'):7.3f} "
                  f"{se.mean():8.3f} {hits:>5}/{len(z):<4} {grads:10.3g} {cpu:8.1f}")  # fmt: skip
        print(f"{name:>20} {'truth' if truth is not None else 'reference':>26} "
              f"{ref if ref is not None else float('nan'):10.3f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

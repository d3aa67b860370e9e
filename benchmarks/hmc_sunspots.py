"""Study: the ``hmc`` cell of thesis Table 5.1 / paper 000 Table 1 on the sunspots (issue 34):
its test NMSE and whether its hyperparameters mix, per seed, for given settings.

Each seed is one fit of the method's own code (the same random stream as a cell of that
seed). Printed per seed: the test NMSE (MSE over the test targets' variance, as
``bnnsweep.metrics``), the rank-normalised split R-hat across chains of ln beta and of every
ln alpha_k, the cell's status, the divergent trajectories after burn-in (of all, thinned out or kept), the acceptance rate and the
posterior means of the hyperparameters; then the NMSE mean +- s.e. over the seeds.

Run (the thesis's protocol, one alpha; then the grouped prior with longer chains):
    nice -n 10 python benchmarks/hmc_sunspots.py --seeds 0 1 2 3 4 \\
        --set prior=single --set burn_in=100 --set samples=200
    nice -n 10 python benchmarks/hmc_sunspots.py --seeds 0 1 2 3 4 --set prior=grouped \\
        --set burn_in=2000 --set samples=1000 --set thin=5 --set leapfrog=20 \\
        --set burn_leapfrog=20 --set target_accept=0.9
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import yaml

from bnnsweep import datasets
from bnnsweep.methods import get_method
from bnnsweep.methods.hmc import hyperparameter_rhats
from bnnsweep.metrics import regression_metrics, unstandardise


def _quarter_means(trace: np.ndarray) -> np.ndarray:
    """Mean of a (S, C) trace in each quarter of the kept samples, per chain: (C, 4)."""
    return np.stack([q.mean(axis=0) for q in np.array_split(trace, 4, axis=0)], axis=1)


def one_seed(split, settings, seed: int) -> dict:
    method = get_method("hmc")
    start = time.process_time()
    result = method.fit(split, settings, np.random.default_rng(seed), log=lambda *_: None)
    mean, var = unstandardise(result.pred_mean, result.pred_var, split.y_mean, split.y_scale)
    y = split.y_test * split.y_scale + split.y_mean
    alphas, betas = result.traces["sample_alpha"][1], result.traces["sample_beta"][1]
    groups = [str(g) for g in result.coords["group"]]
    rhat_beta, rhat_alpha, _ = hyperparameter_rhats(betas, alphas, groups)
    return {
        "nmse": regression_metrics(y, mean, var)["test_nmse"],
        "rmse": regression_metrics(y, mean, var)["test_rmse"],
        "rhat": {
            "ln beta": rhat_beta,
            **{f"ln alpha_{g}": r for g, r in zip(groups, rhat_alpha, strict=True)},
        },
        "status": result.status,
        "divergent": result.diagnostics["divergent"],
        "trajectories": result.diagnostics["trajectories"],
        "acceptance": result.diagnostics["acceptance_rate"],
        "alpha": dict(zip(groups, alphas.mean(axis=(0, 1)).round(3).tolist(), strict=True)),
        "beta": float(betas.mean()),
        "chain_beta": _quarter_means(betas),
        "chain_alpha": _quarter_means(alphas[:, :, 0]),
        "cpu_s": time.process_time() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="sunspots", help="also: tecator (RMSE in fat %%)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an hmc setting (default: hidden 8, erf, persistence 0.95)")  # fmt: skip
    parser.add_argument("--per-chain", action="store_true",
                        help="also each chain's mean beta and first alpha in each quarter of its samples")  # fmt: skip
    args = parser.parse_args()
    values = {"hidden": 8, "activation": "erf", "prior": "single", "persistence": 0.95}
    for item in args.set:
        key, _, value = item.partition("=")
        values[key] = yaml.safe_load(value)
    settings = get_method("hmc").settings(values)
    split = datasets.load(args.dataset).split("default")
    print(f"{args.dataset}, hmc {values}")
    nmse = []
    for seed in args.seeds:
        r = one_seed(split, settings, seed)
        nmse.append(r["nmse"])
        rhats = ", ".join(f"{k} {v:.3f}" for k, v in r["rhat"].items())
        print(f"seed {seed}: NMSE {r['nmse']:.4f}, RMSE {r['rmse']:.4f}; R-hat {rhats}; status {r['status']}; "
              f"divergent {r['divergent']}/{r['trajectories']} trajectories; acceptance {r['acceptance']:.2f}; "
              f"<alpha> {r['alpha']}, <beta> {r['beta']:.2f}; CPU {r['cpu_s']:.0f} s",
              flush=True)  # fmt: skip
        if args.per_chain:
            for name in ("chain_beta", "chain_alpha"):
                rows = "; ".join(" ".join(f"{v:.4g}" for v in c) for c in r[name])
                print(f"  {name.split('_')[1]} by chain, quarter means: {rows}")
    x = np.array(nmse)
    se = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else float("nan")
    print(f"NMSE {x.mean():.4f} +- {se:.4f} (s.e., {x.size} seeds)")


if __name__ == "__main__":
    main()

"""Benchmark: the variational methods on sunspots (H = 8, paper 000 sec. 4.2).

Times one ``vi_gauss`` diag fit and one ``vi_mixture`` fit with M = 5 (one start each), and
the cost of one evaluation of the mixture bound with its gradient (component step) against
M in {1, 2, 3, 5, 8}, with the ratio to M = 1, which should grow at most linearly in M.
Writes benchmarks/results/bench_vi.nc.
Run: python benchmarks/bench_vi.py [--quick]   (--quick: evaluation costs only, no fits)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.engines.variational.hyperposterior import HyperPosterior  # noqa: E402
from bnnsweep.methods import get_method  # noqa: E402
from bnnsweep.methods.vi_gauss import GaussianBound  # noqa: E402
from bnnsweep.methods.vi_mixture import MixtureBound, mutual_information_bound  # noqa: E402
from bnnsweep.models.vi_family import GaussianFamily  # noqa: E402

COMPONENTS = (1, 2, 3, 5, 8)


def evaluation_seconds(split, M: int, repeats: int = 30) -> float:
    """Seconds for one value + gradient of the mixture bound over all component parameters."""
    settings = get_method("vi_mixture").settings({"hidden": 8, "components": M})
    objective, noise = settings.build(split)
    family = GaussianFamily("diag", objective.network.n_weights)
    bound = MixtureBound(GaussianBound(objective, family))
    hyper = HyperPosterior.initial(objective.prior, noise, objective.n_targets)
    rng = np.random.default_rng(0)
    W = family.n_weights
    comp = np.concatenate([rng.normal(0, 0.5, (M, W)), np.full((M, W), np.log(0.05))], axis=1)
    smooth = comp + np.concatenate([np.zeros((M, W)), np.full((M, W), 1.0)], axis=1)
    log_Q = np.full(M, -np.log(M))

    def once():
        values, grads = bound.components(comp, hyper)
        mutual_information_bound(log_Q, comp, smooth)

    once()
    start = time.perf_counter()
    for _ in range(repeats):
        once()
    return (time.perf_counter() - start) / repeats


def timed_fit(split, method: str, values: dict):
    m = get_method(method)
    start = time.perf_counter()
    result = m.fit(split, m.settings(values), np.random.default_rng(0), log=lambda *_: None)
    return time.perf_counter() - start, result


def main(quick: bool) -> None:
    split = datasets.load("sunspots").split("default")
    per_eval = np.array([evaluation_seconds(split, M) for M in COMPONENTS])
    for M, sec in zip(COMPONENTS, per_eval, strict=True):
        print(
            f"M={M}: {1e3 * sec:.2f} ms per bound+gradient evaluation, ratio to M=1: {sec / per_eval[0]:.2f}"
        )
    data = {"eval_seconds": (("components",), per_eval)}
    if not quick:
        for label, method, values in (
            ("vi_gauss_diag", "vi_gauss", {"hidden": 8, "restarts": 1}),
            ("vi_mixture_m5", "vi_mixture", {"hidden": 8, "components": 5, "restarts": 1}),
        ):
            seconds, result = timed_fit(split, method, values)
            nmse = float(np.mean((result.pred_mean - split.y_test) ** 2) / np.var(split.y_test))
            print(f"{label}: {seconds:.1f} s, bound {result.log_evidence:.3f}, test NMSE {nmse:.3f}, "
                  f"{result.n_grad_evals} evaluations, status {result.status}")  # fmt: skip
            data[f"{label}_seconds"] = ((), seconds)
            data[f"{label}_bound"] = ((), result.log_evidence)
            data[f"{label}_test_nmse"] = ((), nmse)
    out = Path(__file__).parent / "results" / "bench_vi.nc"
    out.parent.mkdir(exist_ok=True)
    xr.Dataset(data, coords={"components": list(COMPONENTS)}).to_netcdf(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main("--quick" in sys.argv)

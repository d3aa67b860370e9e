"""Benchmark: batched penalised-error gradient and exact Hessian against a Python loop over
weight vectors, and one laplace cell per hidden size on the robot arm.

Prints absolute times and the batched/loop speed-up, and writes benchmarks/results/*.nc.
Run: python benchmarks/bench_objective.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.methods import get_method  # noqa: E402


def best_time(fn, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    split = datasets.load("robot_arm").split("default")
    method = get_method("laplace")
    hidden = [1, 4, 8, 16, 24]
    batch = 16
    rows = {
        "grad_batched_s": [],
        "grad_loop_s": [],
        "hess_batched_s": [],
        "hess_loop_s": [],
        "laplace_cell_s": [],
    }
    for h in hidden:
        settings = method.settings({"hidden": h, "restarts": 3, "cycles": 10})
        objective, _ = settings.build(split)
        w = objective.network.init_weights(np.random.default_rng(0), batch)
        alpha, beta = np.ones(objective.prior.n_groups), 100.0
        rows["grad_batched_s"].append(best_time(lambda: objective.value_and_grad(w, alpha, beta)))
        rows["grad_loop_s"].append(
            best_time(lambda: [objective.value_and_grad(v[None], alpha, beta) for v in w])
        )
        rows["hess_batched_s"].append(best_time(lambda: objective.hessian(w, alpha, beta), 3))
        rows["hess_loop_s"].append(
            best_time(lambda: [objective.hessian(v[None], alpha, beta) for v in w], 3)
        )
        start = time.perf_counter()
        method.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)
        rows["laplace_cell_s"].append(time.perf_counter() - start)
    print(
        f"{'H':>3} {'grad b/loop ms':>16} {'speed-up':>8} {'hess b/loop ms':>18} {'speed-up':>8} {'laplace cell s':>14}"
    )
    for i, h in enumerate(hidden):
        gb, gl = rows["grad_batched_s"][i], rows["grad_loop_s"][i]
        hb, hl = rows["hess_batched_s"][i], rows["hess_loop_s"][i]
        print(
            f"{h:>3} {gb * 1e3:7.2f}/{gl * 1e3:7.2f} {gl / gb:8.1f} {hb * 1e3:8.2f}/{hl * 1e3:8.2f} {hl / hb:8.1f} {rows['laplace_cell_s'][i]:14.2f}"
        )
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    ds = xr.Dataset(
        {k: ("hidden", np.array(v), {"units": "s"}) for k, v in rows.items()},
        coords={"hidden": hidden},
    )
    ds.attrs.update(batch=batch, dataset="robot_arm", note="laplace cell: 3 restarts, 10 cycles")
    ds.to_netcdf(out / "bench_objective.nc")


if __name__ == "__main__":
    main()

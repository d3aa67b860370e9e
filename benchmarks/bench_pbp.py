"""Benchmark: PBP over all 20 Boston splits (40 epochs) as one vectorised batch against the
same 20 fits one after another, and one protein split (100 units, 20 epochs).

Prints wall times, time per epoch per data point (per replicate) and the speed-up of
batching, and writes benchmarks/results/bench_pbp.nc.
Run: python benchmarks/bench_pbp.py [--epochs 40] [--protein-epochs 20]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from bnnsweep import datasets  # noqa: E402
from bnnsweep.methods.adf import PBPSettings, fit, fit_many  # noqa: E402


def quiet(*_):
    pass


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--protein-epochs", type=int, default=20)
    args = parser.parse_args()

    boston = datasets.load("boston_housing")
    splits = [boston.split(str(i)) for i in range(20)]
    settings = PBPSettings(hidden=50, epochs=args.epochs, trace_test=False)
    n_train = splits[0].x_train.shape[0]
    seeds = range(len(splits))

    batched_s, batched = timed(
        lambda: fit_many(splits, settings, [np.random.default_rng(s) for s in seeds], log=quiet)
    )
    loop_s, looped = timed(
        lambda: [
            fit(sp, settings, np.random.default_rng(s), log=quiet)
            for sp, s in zip(splits, seeds, strict=True)
        ]
    )
    same = all(
        np.allclose(a.pred_mean, b.pred_mean, rtol=1e-9, atol=1e-12)
        for a, b in zip(batched, looped, strict=True)
    )
    points = args.epochs * n_train * len(splits)
    print(f"Boston, 20 splits x {args.epochs} epochs x {n_train} points, PBP 50 ReLU units")
    print(
        f"  batched:  {batched_s:8.2f} s   {1e6 * batched_s / points:7.2f} us per epoch per point"
    )
    print(f"  one by one: {loop_s:6.2f} s   {1e6 * loop_s / points:7.2f} us per epoch per point")
    print(f"  speed-up of batching: {loop_s / batched_s:.2f}x; same predictions: {same}")

    protein = datasets.load("protein").split("0")
    p_settings = PBPSettings(hidden=100, epochs=args.protein_epochs, trace_test=False)
    protein_s, _ = timed(lambda: fit(protein, p_settings, np.random.default_rng(0), log=quiet))
    p_points = args.protein_epochs * protein.x_train.shape[0]
    print(
        f"Protein split 0, {args.protein_epochs} epochs x {protein.x_train.shape[0]} points, 100 units"
    )
    print(f"  {protein_s:8.2f} s   {1e6 * protein_s / p_points:7.2f} us per epoch per point")

    out = xr.Dataset(
        {
            "boston_batched_s": batched_s,
            "boston_loop_s": loop_s,
            "boston_us_per_epoch_point_batched": 1e6 * batched_s / points,
            "boston_us_per_epoch_point_loop": 1e6 * loop_s / points,
            "speedup": loop_s / batched_s,
            "protein_s": protein_s,
            "protein_us_per_epoch_point": 1e6 * protein_s / p_points,
        },
        attrs={
            "boston_epochs": args.epochs,
            "protein_epochs": args.protein_epochs,
            "n_splits": len(splits),
        },  # fmt: skip
    )
    path = Path(__file__).parent / "results" / "bench_pbp.nc"
    path.parent.mkdir(exist_ok=True)
    out.to_netcdf(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Benchmark: one complete paper-protocol chain (paper 001 sec. 5) on the robot arm, H=24:
18 links, per link 100 burn-in trajectories of 50 leapfrog steps and 600 kept of 300.

Prints wall time (and the part spent placing the chains' starting points by optimisation),
gradient evaluations per second, and the ratio of the time per batched leapfrog step to a
bare numpy forward+backward pass on the same batch (18 chains x 200 points), the floor this
code can reach. Writes benchmarks/results/bench_chain.nc.
Run: python benchmarks/bench_chain.py [--quick]
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

from bnnsweep import allocator, datasets  # noqa: E402
from bnnsweep.methods import get_method  # noqa: E402

NEAL = {
    "input_hidden": {"mean": 1.0, "s": 0.2},
    "hidden_bias": {"mean": 1.0, "s": 0.2},
    "hidden_output": {"mean": 1.0, "s": 0.2, "scale_with_hidden": True},
    "output_bias": {"mean": 0.2, "s": 1.0},
}


def bare_step_seconds(objective, batch: int, repeats: int = 2000) -> float:
    """Time of a bare batched tanh-network forward + backward pass with the same algebra as
    the package (bias in the product on inputs with a ones column, g' written over a) but
    no Python layers: no unpacking, no energy terms, no leapfrog bookkeeping."""
    net = objective.network
    w = net.init_weights(np.random.default_rng(0), batch)
    p = net.unpack(w)
    w1b = np.concatenate([p["W1"], p["b1"][..., None]], axis=2)
    W2, b2 = p["W2"], p["b2"]
    x1 = np.concatenate([objective.x, np.ones((len(objective.x), 1))], axis=1)
    t = objective.t

    def step():
        a = np.matmul(x1, w1b.transpose(0, 2, 1))
        z = np.tanh(a)
        r = np.matmul(z, W2.transpose(0, 2, 1))
        r += b2[:, None, :]
        r -= t
        d = np.matmul(r, W2)
        np.multiply(z, z, out=a)
        np.subtract(1.0, a, out=a)
        d *= a
        return np.matmul(d.transpose(0, 2, 1), x1), np.matmul(r.transpose(0, 2, 1), z), r.sum(1)

    for _ in range(50):
        step()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    return (time.perf_counter() - start) / repeats


def main(quick: bool) -> None:
    allocator.tune()
    split = datasets.load("robot_arm").split("default")
    settings = {"hidden": 24, "schedule": "paper", "hyperpriors": NEAL,
                "noise_hyperprior": {"mean": 400.0, "s": 0.2}, "ais_particles": 0}  # fmt: skip
    if quick:
        settings.update(burn_in=20, samples=20)
    method = get_method("chaining")
    s = method.settings(settings)
    n_links = 18
    steps_per_chain = s.burn_in * s.burn_leapfrog + s.samples * s.leapfrog
    start = time.perf_counter()
    result = method.fit(split, s, np.random.default_rng(0), log=lambda *_: None)
    wall = time.perf_counter() - start
    start_s = result.diagnostics["start_seconds"]
    objective, _ = s.build(split)
    floor = bare_step_seconds(objective, n_links)
    per_step = (wall - start_s) / steps_per_chain
    print(
        f"paper protocol chain, robot_arm H=24, {n_links} links, {steps_per_chain} leapfrog steps per link"
    )
    print(f"wall time            {wall:8.1f} s (of which {start_s:.1f} s placing the chain starts)")
    print(f"gradient evals / s   {result.n_grad_evals / wall:8.0f} (single-network gradients)")
    print(
        f"time per batched step {per_step * 1e3:7.3f} ms (sampling, evidence terms included); "
        f"bare numpy floor {floor * 1e3:.3f} ms; ratio {per_step / floor:.2f}"
    )
    print(
        f"ln p(D) = {result.log_evidence:.2f} +- {result.log_evidence_se:.2f} (TI {result.diagnostics['log_evidence_ti']:.2f})"
    )
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    xr.Dataset(
        {
            "wall_time": ((), wall, {"units": "s"}),
            "start_time": ((), start_s, {"units": "s"}),
            "grad_evals_per_s": ((), result.n_grad_evals / wall, {"units": "1/s"}),
            "step_time": ((), per_step, {"units": "s"}),
            "floor_step_time": ((), floor, {"units": "s"}),
            "log_evidence": ((), result.log_evidence, {"units": "nats"}),
        },
        attrs={"quick": int(quick), "steps_per_chain": steps_per_chain},
    ).to_netcdf(out / "bench_chain.nc")


if __name__ == "__main__":
    main("--quick" in sys.argv)

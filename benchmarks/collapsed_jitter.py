"""What the collapsed target's jitter (``models.collapsed.JITTER``) changes, on the robot arm
(chaining's target, tanh units, Neal's hyperpriors): how many of 2e5 prior draws give a
non-finite phi for several jitters, and at 32 L-BFGS minima of the posterior the largest
diagonal of B and |phi(JITTER) - phi(0)|:

    python benchmarks/collapsed_jitter.py --hidden 4 8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

import bnnsweep.models.collapsed as collapsed  # noqa: E402
from bnnsweep.engines.evidence import valleys  # noqa: E402
from bnnsweep.runtime.jax_runtime import jax, jnp  # noqa: E402


def phi_batch(full, jitter: float, theta: np.ndarray) -> np.ndarray:
    """phi of the collapsed target built with ``jitter`` (read when the model is built)."""
    shipped = collapsed.JITTER
    collapsed.JITTER = jitter
    try:
        model = collapsed.CollapsedModel(full.objective, full.noise_prior)
        return np.asarray(jax.jit(jax.vmap(model.phi_one))(jnp.asarray(theta)))
    finally:
        collapsed.JITTER = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args()
    for H in args.hidden:
        full, _ = robot_arm(H)
        model = collapsed.CollapsedModel(full.objective, full.noise_prior)
        theta, _ = model.sample_prior(200_000, np.random.default_rng(0))
        for jitter in (1e-12, 1e-14, 1e-15, 0.0):
            bad = int(np.sum(~np.isfinite(phi_batch(full, jitter, theta))))
            print(f"H = {H}, jitter {jitter:g}: {bad} of {len(theta)} prior draws non-finite")
        w, e, _, _, _ = valleys.find_minima(model, valleys.ValleySettings(starts=32),
                                            np.random.default_rng(0))  # fmt: skip
        w = w[np.isfinite(e)]
        n1, x = model.n_first, np.asarray(full.objective.x)
        I = x.shape[1]
        top = []
        for th in w:
            w1, b1 = th[: H * I].reshape(H, I), th[H * I : n1]
            psi = np.c_[np.tanh(x @ w1.T + b1), np.ones(len(x))]
            log_a = np.r_[np.full(H, th[n1]), th[n1 + 1]]
            top.append(np.max(1 + np.exp(th[n1 + 2]) * (psi**2).sum(0) / np.exp(log_a)))
        shift = np.abs(phi_batch(full, collapsed.JITTER, w) - phi_batch(full, 0.0, w))
        print(f"H = {H}: {len(w)} minima, max_j B_jj {min(top):.2g}..{max(top):.2g}, "
              f"|phi(JITTER) - phi(0)| <= {np.nanmax(shift):.1e} nats")  # fmt: skip


if __name__ == "__main__":
    main()

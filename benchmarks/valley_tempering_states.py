"""Where the lambda = 1 states of ``valley_tempering`` lie on the robot arm: inside the
valleys' Gaussians or outside every one of them (the states the reference's prior component
labels). One run of chaining's default estimator (``engines.evidence.valley_tempering``
with its defaults) on the chaining target (tanh units, Neal's hyperpriors), then, for the
states under the prior's label and for the others: their share, the energy E = phi + E_0
(median and 5-95%), the squared Mahalanobis distance to the nearest valley's Gaussian
(W is typical inside one), and the hidden units' output- and input-weight norms.

    python benchmarks/valley_tempering_states.py --hidden 8 --seed 0

Long: one run at H = 8 takes 6-12 minutes of CPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_evidence import robot_arm  # noqa: E402

from bnnsweep.engines.evidence import valley_tempering as vt  # noqa: E402
from bnnsweep.engines.evidence import valleys  # noqa: E402
from bnnsweep.runtime.jax_runtime import jax, jnp  # noqa: E402


def unit_norms(w: np.ndarray, spec) -> tuple[np.ndarray, np.ndarray]:
    """Per hidden unit, |output weights| and |input weights| (layout W1, b1, W2, b2)."""
    H, I, P = spec.n_hidden, spec.n_inputs, spec.n_outputs
    w1 = w[:, : H * I].reshape(-1, H, I)
    w2 = w[:, H * I + H : H * I + H + P * H].reshape(-1, P, H)
    return np.linalg.norm(w2, axis=1), np.linalg.norm(w1, axis=2)


def nearest_mahalanobis(ref: vt.Reference, states: np.ndarray) -> np.ndarray:
    """The smallest squared Mahalanobis distance of each state to a valley's Gaussian."""
    valley = ref.valleys >= 0
    z = np.einsum("kij,nkj->nki", ref.inverses[valley], states[:, None] - ref.centres[valley])
    return np.min(np.sum(z * z, axis=2), axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    target, _ = robot_arm(args.hidden)
    spec = target.spec
    started = time.process_time()
    out, res = vt.estimate_and_run(
        target, vt.ValleyTemperingSettings(), np.random.default_rng([args.seed, 33])
    )
    print(f"H = {args.hidden} seed {args.seed}: ln p(D) {out.log_z:.2f} +- {out.log_z_se:.2f} "
          f"{out.status} | round trips {res.run.round_trips.mean():.1f} per ladder | "
          f"{time.process_time() - started:.0f} s CPU")  # fmt: skip
    states = res.run.posterior_samples.reshape(-1, res.run.posterior_samples.shape[-1])
    labels = res.top_labels.ravel()
    energy = jax.jit(jax.vmap(valleys.energy_function(target)))
    pick = np.arange(0, len(states), max(1, len(states) // 2000))
    for name, mask in (
        ("prior's label", labels[pick] < 0),
        ("a valley's label", labels[pick] >= 0),
    ):
        if not mask.any():
            print(f"{name}: no state")
            continue
        x = states[pick][mask]
        e = np.asarray(energy(jnp.asarray(x)))
        d2 = nearest_mahalanobis(res.reference, x)
        out_norm, in_norm = unit_norms(x, spec)
        print(f"{name}: share {np.mean(labels < 0) if name.startswith('prior') else np.mean(labels >= 0):.2f}"
              f" | E median {np.median(e):.1f} [5-95%: {np.percentile(e, 5):.1f}, "
              f"{np.percentile(e, 95):.1f}] | Mahalanobis^2 to the nearest valley median "
              f"{np.median(d2):.3g} (W = {x.shape[1]}) | per unit |output w| median "
              f"{np.median(out_norm):.2f} (max {np.median(out_norm.max(axis=1)):.2f}), |input w| "
              f"median {np.median(in_norm):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

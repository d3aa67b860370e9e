"""Where the lambda = 1 states of ``valley_tempering`` lie on the robot arm: inside the
valleys' Gaussians or outside every one of them (the states the reference's prior component
labels). One run of chaining's default estimator (``engines.evidence.valley_tempering``
with its defaults) on the chaining target (tanh units, Neal's hyperpriors), then, for the
states under the prior's label and for the others: their share, the energy E = phi + E_0
(median and 5-95%), the squared Mahalanobis distance to the nearest valley's Gaussian
(W is typical inside one), the hidden units' output- and input-weight norms, and how flat
the posterior is along each unit's scale line (input weights times c, output weights over c).

    python benchmarks/valley_tempering_states.py --hidden 8 --seed 0

With ``--streams N``: one valley search, then N tempering runs from it on independent random
streams (their estimates, s.e. and shares under the prior's label): the spread that does not
come from the search.

    python benchmarks/valley_tempering_states.py --hidden 4 --seed 0 --streams 4

``--importance N`` (default 100,000) adds importance sampling from each run's final
reference (``vt.reference_importance``, a stochastic lower bound with no Markov chain);
``--quench N`` minimises N of each stream's lambda = 1 states and says whether they end in
the search's valleys or in ones it missed; ``--set KEY=VALUE`` overrides a setting:

    python benchmarks/valley_tempering_states.py --hidden 4 --seed 1 --streams 1 --quench 96 --set tail_dof=3

Long: one run at H = 8 takes 6-12 minutes of CPU, at H = 4 1-4.
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


def unit_scale_exponents(spec) -> np.ndarray:
    """(H, W) exponents of the hidden units' scale maps w -> w * c^e_h: +1 on unit h's input
    weights and bias, -1 on its output weights (layout W1, b1, W2, b2)."""
    I, H, P = spec.n_inputs, spec.n_hidden, spec.n_outputs
    e = np.zeros((H, H * I + H + P * H + P))
    for h in range(H):
        e[h, h * I : (h + 1) * I] = 1.0
        e[h, H * I + h] = 1.0
        e[h, H * I + H + h : H * I + H + P * H : H] = -1.0
    return e


def scale_stiffness(target, states: np.ndarray, labels: np.ndarray, rng) -> None:
    """How flat the posterior is along a unit's scale line (input weights times c, output
    weights over c; flat for a linear unit): the mean Metropolis acceptance at lambda = 1 of
    ln c ~ N(0, s^2) on one unit, with the map's Jacobian c^(I + 1 - P)."""
    energy = jax.jit(jax.vmap(valleys.energy_function(target)))
    e = unit_scale_exponents(target.spec)
    base = np.asarray(energy(jnp.asarray(states)))
    for sd in (0.003, 0.01, 0.03, 0.1, 0.3):
        acc = []
        for row in e:
            log_c = sd * rng.standard_normal(len(states))
            moved = states * np.exp(log_c[:, None] * row)
            log_a = base - np.asarray(energy(jnp.asarray(moved))) + log_c * row.sum()
            acc.append(np.exp(np.minimum(log_a, 0.0)))
        acc = np.array(acc)
        print(f"scale move s.d. {sd}: acceptance {acc.mean():.3f} (prior's label "
              f"{acc[:, labels < 0].mean():.3f}, a valley's {acc[:, labels >= 0].mean():.3f})")  # fmt: skip


def quenched(target, settings, found, states: np.ndarray, n: int) -> str:
    """``n`` of the lambda = 1 states, evenly spaced, minimised (``valleys.minima_from``): how
    many end in a valley of the search, how many in new valleys (distinct modulo the
    symmetries) and the Laplace masses of those."""
    vs = settings.search_settings()
    symmetry = target.symmetry
    pick = states[np.linspace(0, len(states) - 1, n).astype(int)]
    w, e, g, a, _ = valleys.minima_from(target, pick, vs)
    known, new = 0, []
    for i in np.flatnonzero(np.isfinite(e) & (g <= vs.gtol)):
        if any(valleys.in_valley(symmetry, w[i], v, vs) for v in found):
            known += 1
        else:
            new.append(i)
    fresh = valleys.distinct_valleys(symmetry, w[new], e[new], g[new], a[new], vs) if new else []
    masses = sorted((round(v.laplace_log_mass, 1) for v in fresh), reverse=True)
    return (f"{n} states quenched: {known} in the search's valleys, {len(new)} in {len(fresh)} "
            f"new ones (Laplace ln masses {masses[:6]}; the search's best "
            f"{max(v.laplace_log_mass for v in found):.1f})")  # fmt: skip


def importance(target, res, args) -> str:
    """``vt.reference_importance`` from the run's final reference (``--importance`` draws): a
    stochastic lower bound with no Markov chain."""
    value, se, ess = vt.reference_importance(
        target, res.reference, args.importance, np.random.default_rng([args.seed, 77])
    )
    return (f"importance sampling from the final reference ({args.importance} draws): "
            f"{value:.2f} +- {se:.2f}, ESS {ess:.0f}")  # fmt: skip


def streams(target, args) -> None:
    """One valley search, ``args.streams`` tempering runs from it (``--streams``)."""
    settings = vt.ValleyTemperingSettings(**args.overrides)
    ref, found, _ = vt.search(target, settings, np.random.default_rng([args.seed, 5]))
    print(f"H = {args.hidden}, search of seed {args.seed}: {len(found)} valleys")
    values, ses = [], []
    for stream in range(args.streams):
        res = vt.run_valley_tempering(
            target, ref, settings, np.random.default_rng([args.seed, 100 + stream])
        )
        out = vt.estimate_from_valley_run(res, settings)
        values.append(out.log_z)
        ses.append(out.log_z_se)
        print(f"  stream {stream}: {values[-1]:.2f} +- {ses[-1]:.2f} {out.status} | round trips "
              f"{res.run.round_trips.mean():.1f} | prior's label at lambda = 1 "
              f"{np.mean(res.top_labels < 0):.2f}", flush=True)  # fmt: skip
        if args.importance:
            print("    " + importance(target, res, args), flush=True)
        if args.quench:
            states = res.run.posterior_samples.reshape(-1, res.run.posterior_samples.shape[-1])
            print("    " + quenched(target, settings, found, states, args.quench), flush=True)
    print(f"s.d. over streams {np.std(values, ddof=1):.2f}, mean s.e. {np.mean(ses):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--streams", type=int, default=0, help="tempering runs from one search")
    parser.add_argument("--quench", type=int, default=0,
                        help="minimise this many lambda = 1 states of each stream")  # fmt: skip
    parser.add_argument("--importance", type=int, default=100000,
                        help="draws of importance sampling from the final reference (0: none)")  # fmt: skip
    parser.add_argument("--log", action="store_true",
                        help="print the burn-in rounds (swaps, occupancy, the prior's label)")  # fmt: skip
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="valley_tempering settings over the defaults (e.g. tail_dof=3)")  # fmt: skip
    args = parser.parse_args()
    args.overrides = {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in args.set)}
    target, _ = robot_arm(args.hidden)
    if args.streams:
        streams(target, args)
        return
    spec = target.spec
    started = time.process_time()
    settings = vt.ValleyTemperingSettings(**args.overrides)
    rng = np.random.default_rng([args.seed, 33])
    ref, found, _ = vt.search(target, settings, rng)
    res = vt.run_valley_tempering(target, ref, settings, rng, log=print if args.log else None)
    out = vt.estimate_from_valley_run(res, settings)
    print(f"H = {args.hidden} seed {args.seed}: {len(found)} valleys, ln p(D) "
          f"{out.log_z:.2f} +- {out.log_z_se:.2f} {out.status} | round trips "
          f"{res.run.round_trips.mean():.1f} per ladder | {time.process_time() - started:.0f} s CPU")  # fmt: skip
    if args.importance:
        print(importance(target, res, args), flush=True)
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
    scale_stiffness(target, states[pick], labels[pick], np.random.default_rng(0))
    if args.quench:
        print(quenched(target, settings, found, states, args.quench))


if __name__ == "__main__":
    main()

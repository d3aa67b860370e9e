"""Study: the drop of the mean relative error |L - bound| / |L| from mean field to a mixture of
M mean-field components (thesis §2.5.1, fig. 2.5) against the number of coordinate sweeps
the mixture is given, on random 2-4-6 nets of span 1 (weights and biases U(-1, 1), the six
bottom units clamped at 0, ln P(V) by enumeration).

The thesis (§2.6) reports a 27 % drop at M = 5 and gives no stopping rule for §2.5.1; the
shipped config (config/thesis_sbn.yaml) runs the mixtures to 30 sweeps and gets about 55 %.
This prints, per sweep budget, mean field's and the mixture's mean relative error (the mean
of the per-net ratios, as the figures, and the ratio of the means), the drop, and the mean
number of components with Q(m) > 0.01. Mean field is run from ``--starts`` random starts and
the best bound kept, to show that its optimum does not depend on the start.

Run: nice -n 10 python benchmarks/sbn_mixture_sweeps.py [--nets 200] [--components 5]
     [--sweeps 2 5 10 30] [--starts 5] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from bnnsweep.datasets.sbn_ensembles import SBN_LAYERS, network_ensemble_rows
from bnnsweep.engines.sbn import fit_mean_field, fit_mixture
from bnnsweep.models.sigmoid_belief import exact_log_marginal, n_parameters, unpack_parameters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nets", type=int, default=200)
    parser.add_argument("--components", type=int, default=5)
    parser.add_argument("--sweeps", type=int, nargs="+", default=[2, 5, 10, 30])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    n_par = n_parameters(SBN_LAYERS)
    rows = network_ensemble_rows(SBN_LAYERS, args.nets, 1.0, (1, 2, 3))
    net = unpack_parameters(rows[:, :n_par], SBN_LAYERS)
    visible = rows[:, n_par:]
    exact = exact_log_marginal(net, visible[:, None, :])[:, 0]
    n_hidden, n_units = net.n_hidden, net.weights.shape[-1]
    rng = np.random.default_rng(args.seed)

    def errors(bound):
        return np.abs(exact - bound) / np.abs(exact), np.abs(exact - bound).sum() / np.abs(
            exact
        ).sum()

    starts = [
        fit_mean_field(
            net.weights,
            net.biases,
            visible,
            rng.random((args.nets, n_hidden)),
            rng.random((args.nets, n_units)),
            100,
            1e-10,
            layer_sizes=SBN_LAYERS,
        ).bound
        for _ in range(args.starts)
    ]
    per_net, pooled = errors(starts[0])
    best, _ = errors(np.max(starts, axis=0))
    print(
        f"{args.nets} nets, mean ln P(V) {exact.mean():.4f}; mean field: {100 * per_net.mean():.3f} % "
        f"(ratio of means {100 * pooled:.3f} %); best of {args.starts} starts "
        f"{100 * best.mean():.3f} %"
    )
    state = rng.bit_generator.state
    for sweeps in args.sweeps:
        rng.bit_generator.state = state  # every budget from the same random start
        mix = fit_mixture(
            net.weights,
            net.biases,
            visible,
            args.components,
            rng,
            sweeps,
            1e-10,
            layer_sizes=SBN_LAYERS,
        )
        mix_net, mix_pooled = errors(mix.bound)
        print(
            f"M = {args.components}, {mix.sweeps:3d} sweeps: {100 * mix_net.mean():.3f} % "
            f"(drop {100 * (1 - mix_net.mean() / per_net.mean()):.1f} %; ratio of means "
            f"{100 * mix_pooled:.3f} %, drop {100 * (1 - mix_pooled / pooled):.1f} %); "
            f"live components {np.mean((mix.q > 0.01).sum(-1)):.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

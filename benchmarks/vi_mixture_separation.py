"""Study: where the components of ``vi_mixture`` go on real data, and what that does to the
bound and the test error, paired with the diagonal fit the mixture starts from (issue 34).

For each seed: the best of ``restarts`` one-component fits (the ``vi_gauss`` diag answer), then
the mixture from it (``fit_mixture``, the method's own code, same random stream as a cell).
Prints per seed the two bounds, the mutual-information bound, each component's own bound minus
the one-component bound, the spread of the component means in weight space (pairwise distance
over the root of the summed variances), the spread of the components' predictive means at the
test inputs against the predictive s.d., and the test error of both (sunspots: NMSE, the MSE
over the test targets' variance; tecator: RMSE in fat %). Then the paired differences
(mixture minus diagonal), mean +- s.e. over seeds.

Run: nice -n 10 python benchmarks/vi_mixture_separation.py sunspots --seeds 0 1 2 3 4 \
         --set outer_iter=10 --set max_iter=50
``--single-set`` gives the one-component fits a schedule of their own (the thesis's: at most
200 quasi-Newton iterations per sweep, to the tolerance), so that on Tecator the mixture
starts from a converged diagonal fit and the paired difference is the mixture's alone.
"""

from __future__ import annotations

import argparse

import numpy as np
import yaml

from bnnsweep import datasets
from bnnsweep.method_base import build_settings
from bnnsweep.methods.laplace import mixture_moments
from bnnsweep.methods.vi_gauss import GaussianBound, predictive
from bnnsweep.methods.vi_mixture import MixtureBound, VIMixtureSettings, fit_mixture, fit_single
from bnnsweep.models.vi_family import GaussianFamily


def one_seed(split, settings, seed: int, error, single_settings=None) -> dict:
    objective, noise_prior = settings.build(split)
    net = objective.network
    family = GaussianFamily("diag", net.n_weights)
    bound = MixtureBound(GaussianBound(objective, family, settings.g2))
    rng = np.random.default_rng(seed)
    quiet = lambda *_: None  # noqa: E731
    singles = [
        fit_single(
            bound,
            single_settings or settings,
            noise_prior,
            net.init_weights(rng, 1, settings.init_scale)[0],
            quiet,
        )  # fmt: skip
        for _ in range(settings.restarts)
    ]
    single = singles[int(np.nanargmax([f.bound for f in singles]))]
    mix = fit_mixture(bound, settings, single, rng, quiet)
    single_mean, _ = predictive(objective, family, single.theta, single.hyper, split.x_test,
                                settings.g2)  # fmt: skip
    preds = [predictive(objective, family, c, mix.hyper, split.x_test, settings.g2)
             for c in mix.comp]  # fmt: skip
    means, variances = np.stack([p[0] for p in preds]), np.stack([p[1] for p in preds])
    mix_mean, mix_var = mixture_moments(np.exp(mix.log_Q), means, variances)
    W = net.n_weights
    mu, var = mix.comp[:, :W], np.exp(2.0 * mix.comp[:, W:])
    pairs = [
        np.linalg.norm((mu[a] - mu[b]) / np.sqrt(var[a] + var[b]))
        for a in range(len(mu))
        for b in range(a)
    ]
    component_bounds, _ = bound.components(mix.comp, mix.hyper)
    return {
        "single_bound": single.bound,
        "mixture_bound": mix.bound,
        "mutual_information": float(mix.mi_trace[-1]),
        "component_minus_single": component_bounds - single.bound,
        "weight_distance": (min(pairs), max(pairs)),
        "prediction_spread": float(means.std(axis=0).mean()),
        "predictive_sd": float(np.sqrt(mix_var).mean()),
        "single_error": error(single_mean),
        "mixture_error": error(mix_mean),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=["sunspots", "tecator"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a vi_mixture setting (default: hidden 8, 5 components, prior single)")  # fmt: skip
    parser.add_argument("--single-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of the one-component fits only (e.g. their own schedule)")  # fmt: skip
    args = parser.parse_args()
    values = {"hidden": 8, "components": 5, "prior": "single"}
    for item in args.set:
        key, _, value = item.partition("=")
        values[key] = yaml.safe_load(value)
    settings = build_settings(VIMixtureSettings, values, "vi_mixture")
    single_values = dict(values)
    for item in args.single_set:
        key, _, value = item.partition("=")
        single_values[key] = yaml.safe_load(value)
    single_settings = build_settings(VIMixtureSettings, single_values, "vi_mixture")
    split = datasets.load(args.dataset).split("default")

    def error(mean):
        mse = float(np.mean((mean - split.y_test) ** 2))
        if args.dataset == "sunspots":
            return mse / float(np.var(split.y_test))
        return float(np.sqrt(mse) * np.ravel(split.y_scale)[0])

    print(f"{args.dataset}, {values}; one-component fits: {single_values}")
    rows = []
    for seed in args.seeds:
        r = one_seed(split, settings, seed, error, single_settings)
        rows.append(r)
        print(f"seed {seed}: L diag {r['single_bound']:.3f} mixture {r['mixture_bound']:.3f} "
              f"I* {r['mutual_information']:.3f}; components' own L - diag "
              f"{np.array2string(r['component_minus_single'], precision=2)}; pairwise distance "
              f"{r['weight_distance'][0]:.1f}-{r['weight_distance'][1]:.1f} s.d.; prediction "
              f"spread {r['prediction_spread']:.4f} vs predictive s.d. {r['predictive_sd']:.4f}; "
              f"error diag {r['single_error']:.4f} mixture {r['mixture_error']:.4f}",
              flush=True)  # fmt: skip
    for name, a, b in (("bound", "mixture_bound", "single_bound"),
                       ("test error", "mixture_error", "single_error")):  # fmt: skip
        diff = np.array([r[a] - r[b] for r in rows])
        se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
        print(f"mixture - diagonal, {name}: {diff.mean():+.4f} +- {se:.4f} (s.e., "
              f"{diff.size} seeds); diagonal {np.mean([r[b] for r in rows]):.4f}, mixture "
              f"{np.mean([r[a] for r in rows]):.4f}")  # fmt: skip


if __name__ == "__main__":
    main()

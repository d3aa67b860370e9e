"""Study: why the M = 10 mixture of the digits runs (thesis figs. 4.8-4.9, label
``digits_mixture`` of config/thesis_bm.yaml) ends with few live components.

Runs that label's protocol for one machine and ``--iterations`` learning steps, keeping the
path, and prints per step: the live components (Q(m) > 0.01), the largest mixing weights, each
component's mean-field bound L_m at T = 1 minus the largest (same order), and the number of
component pairs whose visible and hidden means agree within 0.1 in every unit (0: no two
components sit on the same mode). Q(m) follows eq. 2.35, exp(-E_m) with -E_m = L_m + smoothing
terms: components on modes whose bounds are nats below the best get weights near exp(-nats).

Run: nice -n 10 python benchmarks/bm_digits_mixing.py [--iterations 8]
"""

from __future__ import annotations

import argparse

import numpy as np
import yaml

from bnnsweep import datasets
from bnnsweep.engines.boltzmann.mean_field import mean_field_bound
from bnnsweep.methods import get_method
from bnnsweep.models.boltzmann import grid_neighbourhood_mask, vector_to_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--config", default="config/thesis_bm.yaml")
    args = parser.parse_args()
    with open(args.config) as f:
        settings = dict(yaml.safe_load(f)["experiments"]["bm_digits"]["methods"]["digits_mixture"])
    settings.pop("method")
    settings.update(iterations=args.iterations, runs=1)
    method = get_method("bm_vi")
    split = datasets.load("digits_binary").split("default")
    result = method.fit(
        split, method.settings(settings), np.random.default_rng(0), log=lambda *a: None
    )
    side = int(round(np.sqrt(split.x_train.shape[1])))
    mask = grid_neighbourhood_mask(side, side, settings["grid_hidden"])
    weights = np.asarray(result.traces["weight_path"][1])
    biases = np.asarray(result.traces["bias_path"][1])
    means = np.asarray(result.traces["joint_means"][1])
    log_mixing = np.asarray(result.traces["joint_log_mixing"][1])
    for i in range(means.shape[0]):
        mu = means[i, 0, 0]  # (M, units) of the one machine's joint
        bound = mean_field_bound(vector_to_weights(weights[i, 0], mask), biases[i, 0], mu)
        q = np.exp(log_mixing[i, 0, 0])
        order = np.argsort(-q)
        close = np.abs(mu[:, None, :] - mu[None, :, :]).max(-1) < 0.1
        print(
            f"step {i}: live {int((q > 0.01).sum())}, Q {np.round(q[order][:5], 3).tolist()}, "
            f"L_m - max L {np.round((bound - bound.max())[order][:6], 2).tolist()}, "
            f"pairs within 0.1 {int((close.sum() - len(q)) // 2)}",
            flush=True,
        )


if __name__ == "__main__":
    main()

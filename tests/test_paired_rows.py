"""Common random numbers (issue 17): methods of one (dataset, split, seed, hidden) start from
the same random weights, so a table's rows are paired. A full or factor-analysis Gaussian
starts at the diagonal fit of its own cell and ends at or above it; a mixture ends at or above
its one-component start."""

from __future__ import annotations

import numpy as np
import pytest

from bnnsweep.runner import fit_cell
from bnnsweep.sweep import Cell

COMMON = {"hidden": 3, "restarts": 1, "outer_iter": 10, "max_iter": 40}
LABELS = {
    "vi_diag": ("vi_gauss", {}),
    "vi_fa": ("vi_gauss", {"covariance": "fa", "factors": 1}),
    "vi_full": ("vi_gauss", {"covariance": "full"}),
    "vi_mix": ("vi_mixture", {"components": 2}),
}


def fit(label: str, seed: int):
    method, extra = LABELS[label]
    settings = {**COMMON, **extra}
    axes = (("hidden", 3),) + ((("components", 2),) if method == "vi_mixture" else ())
    cell = Cell("paired", "toy_sine", "default", label, method, seed, axes, settings)
    content = fit_cell(cell, log=lambda m: None)
    return {name: np.asarray(var[1]) for name, var in content.data_vars.items()}


@pytest.fixture(scope="module")
def rows():
    return {seed: {label: fit(label, seed) for label in LABELS} for seed in (0, 1, 2)}


def bound(cell) -> float:
    return float(cell["log_evidence"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_full_and_fa_start_at_the_diagonal_fit_of_the_same_cell(rows, seed):
    row = rows[seed]
    diag = bound(row["vi_diag"])
    for label in ("vi_fa", "vi_full"):
        start = float(row[label]["diag_diagonal_start_bound"])
        assert start == pytest.approx(diag, rel=1e-9, abs=1e-9), label
        assert bound(row[label]) >= diag - 1e-6 * abs(diag), label


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_mixture_ends_at_or_above_its_single_component_start(rows, seed):
    mix = rows[seed]["vi_mix"]
    start = float(mix["diag_single_component_bound"])
    assert bound(mix) >= start - 1e-6 * abs(start)

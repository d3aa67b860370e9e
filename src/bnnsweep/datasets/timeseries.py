"""Sunspot series as a windowed regression problem (paper 000 sec. 4.2, after Weigend et al.).

The yearly series is normalised to zero mean and unit variance with the statistics of the
training years 1700-1920, then each target year t gets as inputs the normalised values of the
12 previous years, most recent first (column k holds year t - k - 1).

The paper quotes 221 training points for 1700-1920. That is the number of years in that
range; with a 12-year window only the targets 1712-1920 have a full window, so the training
set here has 209 cases (the first 12 years serve only as inputs). The test targets are
1921-1979 (59 cases, as in the paper), whose windows reach back into the training years.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .base import DatasetError, Split
from .preprocess import fit_standardiser
from .registry import register
from .sources import SOURCES
from .vendored import load_arrays

WINDOW = 12
NORMALISATION_YEARS = (1700, 1920)
TRAIN_TARGET_YEARS = (1700 + WINDOW, 1920)
TEST_TARGET_YEARS = (1921, 1979)


def lagged_windows(values: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets of an autoregressive problem on a 1-D series.

    Row ``j`` has target ``values[j + window]`` and inputs ``values[j + window - 1]``, ...,
    ``values[j]`` (most recent first). Returns ``(inputs (N, window), targets (N,))`` with
    ``N = len(values) - window``.
    """
    frames = sliding_window_view(np.asarray(values, dtype=np.float64), window + 1)
    return frames[:, -2::-1].copy(), frames[:, -1].copy()


def _year_rows(years: np.ndarray, span: tuple[int, int]) -> np.ndarray:
    return (years >= span[0]) & (years <= span[1])


@register(
    "sunspots",
    metadata={
        "source": "yearly mean sunspot numbers 1700-2008 (NOAA NGDC, international series)",
        "licence": SOURCES["sunspots_yearly"].licence,
        "preprocessing": (
            "Series normalised to zero mean, unit variance with the mean and population s.d. "
            "of the years 1700-1920 (221 values); y_mean/y_scale hold them. Inputs: the 12 "
            "previous years' normalised values, most recent first. Train targets 1712-1920 "
            "(209 cases: the paper's '221 points' counts the years 1700-1920, but the first "
            "12 have no full window); test targets 1921-1979 (59 cases). Targets and inputs "
            "are in normalised units, so the MSE of normalised predictions is the MSE "
            "divided by the training years' variance."
        ),
        "task": "regression",
        "error_measure": "nmse",
        "window": WINDOW,
        "train_target_years": list(TRAIN_TARGET_YEARS),
        "test_target_years": list(TEST_TARGET_YEARS),
        "files": ["sunspots_yearly.npz"],
        "paper": ("Lawrence & Azzouzi, sec. 4.2 (paper 000); Weigend, Huberman & Rumelhart (1990)"),
    },
    split_names=["default"],
)
def sunspots() -> dict[str, Split]:
    """The single sunspot split, 209 training and 59 test windows."""
    table = load_arrays("sunspots_yearly")["data"]
    years, values = table[:, 0], table[:, 1]
    if not np.array_equal(years, np.arange(1700, 1700 + len(years))):
        raise DatasetError("vendored file sunspots_yearly.npz: years must run 1700, 1701, ...")
    mean, scale = fit_standardiser(values[_year_rows(years, NORMALISATION_YEARS), None])
    z = (values - mean[0]) / scale[0]
    inputs, targets = lagged_windows(z, WINDOW)
    target_years = years[WINDOW:]
    train = _year_rows(target_years, TRAIN_TARGET_YEARS)
    test = _year_rows(target_years, TEST_TARGET_YEARS)
    split = Split(
        "default",
        x_train=inputs[train],
        y_train=targets[train, None],
        x_test=inputs[test],
        y_test=targets[test, None],
        y_mean=mean,
        y_scale=scale,
    )
    return {"default": split}

"""Standardisation with training-set statistics, the one scaling helper every loader uses."""

from __future__ import annotations

import numpy as np


def fit_standardiser(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and scale of ``train`` (rows are cases).

    The scale is the population standard deviation (``ddof=0``, as in the benchmark code of
    the UCI recipe). A column whose training values are all identical gets scale 1, so it is
    only centred; testing for identical values rather than ``std == 0`` also catches
    constant columns whose floating-point std comes out as ~1e-13 (naval column 11).
    """
    train = np.asarray(train, dtype=np.float64)
    mean = train.mean(axis=0)
    scale = train.std(axis=0)
    constant = np.ptp(train, axis=0) == 0
    scale[constant] = 1.0
    return mean, scale


def apply_standardiser(
    arrays: tuple[np.ndarray, ...], mean: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, ...]:
    """``(a - mean) / scale`` for each array in ``arrays``."""
    return tuple((np.asarray(a, dtype=np.float64) - mean) / scale for a in arrays)


def standardise(
    train: np.ndarray, *others: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """Fit on ``train``, apply to it and to ``others``.

    Returns ``(train_std, mean, scale, others_std)``.
    """
    mean, scale = fit_standardiser(train)
    train_std, *rest = apply_standardiser((train, *others), mean, scale)
    return train_std, mean, scale, tuple(rest)

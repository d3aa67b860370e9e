"""Standardisation with training-set statistics, the one scaling helper every loader uses."""

from __future__ import annotations

import numpy as np

# The largest magnitude a value may have in original units: its square (a squared error, a
# variance) stays finite in float64 (1e150^2 = 1e300 < 1.8e308).
MAX_ABS_VALUE = 1e150


def standardisation_problem(mean, scale, values) -> str | None:
    """Why targets standardised with ``mean`` and ``scale`` would give numbers that are not
    numbers, or None: a scale that is not finite and positive (0 makes every prediction
    exact, NaN every metric NaN), a mean that is not finite, or ``values`` (the targets in
    original units) beyond ``MAX_ABS_VALUE``, whose squared errors overflow."""
    mean, scale = np.asarray(mean, dtype=float), np.asarray(scale, dtype=float)
    if not np.all(np.isfinite(scale)) or not np.all(scale > 0):
        return f"y_scale must be finite and positive, got {scale.ravel().tolist()[:4]}"
    if not np.all(np.isfinite(mean)):
        return f"y_mean must be finite, got {mean.ravel().tolist()[:4]}"
    largest = float(np.max(np.abs(values), initial=0.0))
    if not largest <= MAX_ABS_VALUE:
        return f"targets reach {largest:.3g} in their own units, beyond {MAX_ABS_VALUE:g}"
    return None


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

"""Tecator fat content from near-infrared spectra (paper 000 sec. 4.3, after Thodberg 1996).

The classic benchmark is the first 215 data rows of the file: rows 1-172 (1-based) train,
173-215 test; rows 216-240 (extrapolation samples) are not used. Inputs are the first ten
principal components of the 100 absorbances, with the PCA (centring + SVD) fitted on the
training rows only; the target is fat. PC scores and target are then standardised with
training statistics.
"""

from __future__ import annotations

import numpy as np

from .base import DatasetError, Split
from .preprocess import standardise
from .registry import register
from .sources import SOURCES
from .vendored import load_arrays

N_BENCHMARK = 215
N_TRAIN = 172
N_COMPONENTS = 10
N_ABSORBANCES = 100


def fit_pca(train: np.ndarray, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """Centre and principal axes of ``train``: returns ``(mean, axes (n_components, D))``.

    Each axis's sign is fixed so that its largest-magnitude loading is positive, which makes
    the scores independent of the SVD routine's sign choice.
    """
    mean = train.mean(axis=0)
    _, _, vt = np.linalg.svd(train - mean, full_matrices=False)
    axes = vt[:n_components]
    pivots = np.argmax(np.abs(axes), axis=1)
    signs = np.sign(axes[np.arange(len(axes)), pivots])
    return mean, axes * signs[:, None]


def _column_indices(columns: np.ndarray, wanted: list[str]) -> list[int]:
    lookup = {str(name): i for i, name in enumerate(columns)}
    missing = [name for name in wanted if name not in lookup]
    if missing:
        raise DatasetError(f"vendored file tecator.npz: missing columns {missing}")
    return [lookup[name] for name in wanted]


@register(
    "tecator",
    metadata={
        "source": (
            "Tecator Infratec Food and Feed Analyzer near-infrared (850-1050 nm) transmission "
            "spectra of chopped meat, StatLib 'tecator'; the instrument and company name "
            "(Tecator) must be mentioned in publications using these data"
        ),
        "licence": SOURCES["tecator"].licence,
        "preprocessing": (
            "Data rows 1-215 (1-based, after the header): rows 1-172 train, 173-215 test; "
            "rows 216-240 unused. Inputs: scores on the first 10 principal components of "
            "absorbance_1..100, PCA (centring + SVD, axis signs fixed so the largest loading "
            "is positive) fitted on the training rows only. Target: fat (%). Scores and "
            "target standardised with training mean and population s.d.; y_mean/y_scale "
            "give RMSE in fat units."
        ),
        "task": "regression",
        "error_measure": "rmse",
        "n_components": N_COMPONENTS,
        "files": ["tecator.npz", "TECATOR_PERMISSION.txt"],
        "paper": "Lawrence & Azzouzi, sec. 4.3 (paper 000); Thodberg (1996)",
    },
    split_names=["default"],
)
def tecator() -> dict[str, Split]:
    """The Tecator benchmark split: 172 training and 43 test spectra."""
    arrays = load_arrays("tecator")
    if "columns" not in arrays:
        raise DatasetError("vendored file tecator.npz: no 'columns' array")
    absorbance = [f"absorbance_{i}" for i in range(1, N_ABSORBANCES + 1)]
    cols = _column_indices(arrays["columns"], [*absorbance, "fat"])
    table = arrays["data"][:N_BENCHMARK]
    spectra, fat = table[:, cols[:-1]], table[:, cols[-1:]]
    mean, axes = fit_pca(spectra[:N_TRAIN], N_COMPONENTS)
    scores = (spectra - mean) @ axes.T
    x_train, _, _, (x_test,) = standardise(scores[:N_TRAIN], scores[N_TRAIN:])
    y_train, y_mean, y_scale, (y_test,) = standardise(fat[:N_TRAIN], fat[N_TRAIN:])
    return {"default": Split("default", x_train, y_train, x_test, y_test, y_mean, y_scale)}

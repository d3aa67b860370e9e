"""Containers shared by every dataset loader: a train/test split and a dataset of named splits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class DatasetError(ValueError):
    """Invalid dataset input: unknown name or split, bad file, NaN, wrong shape or checksum."""


class DataFileError(DatasetError):
    """A prepared dataset file that cannot be read or does not match its checksum."""

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class Split:
    """One train/test partition, already preprocessed for fitting.

    Arrays are float64: ``x_*`` of shape (N, I), ``y_*`` of shape (N, P) for regression.
    ``y_mean``/``y_scale`` (shape (P,)) undo target standardisation, so that errors can be
    reported in original units as ``y * y_scale + y_mean``; they are 0 and 1 when the
    targets were not standardised.

    The four data arrays are stored C-contiguous, however they were made: a loader's
    Fortran-ordered array and the same numbers read back from a prepared NetCDF file must
    give the same fit bit for bit, and BLAS sums in a different order for each layout (an
    LTU network's threshold decisions amplify that last-bit difference into another local
    optimum: a cell fitted by hand and the same cell in the workflow differed by 19 test
    errors on Pima before this).
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    y_mean: np.ndarray
    y_scale: np.ndarray

    def __post_init__(self) -> None:
        for key in ("x_train", "y_train", "x_test", "y_test"):
            arr = np.ascontiguousarray(getattr(self, key))
            object.__setattr__(self, key, arr)
            if arr.ndim != 2:
                raise DatasetError(f"split {self.name!r}: {key} must be 2-D, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise DatasetError(f"split {self.name!r}: {key} contains NaN or inf")
        if self.x_train.shape[0] != self.y_train.shape[0]:
            raise DatasetError(f"split {self.name!r}: x_train and y_train differ in rows")
        if self.x_test.shape[0] != self.y_test.shape[0]:
            raise DatasetError(f"split {self.name!r}: x_test and y_test differ in rows")
        if self.x_train.shape[1] != self.x_test.shape[1]:
            raise DatasetError(f"split {self.name!r}: train and test differ in input columns")

    @property
    def n_inputs(self) -> int:
        return self.x_train.shape[1]

    @property
    def n_outputs(self) -> int:
        return self.y_train.shape[1]


@dataclass(frozen=True)
class Dataset:
    """A registered dataset: its named splits and metadata.

    ``metadata`` holds at least ``source``, ``licence``, ``preprocessing`` and ``task``
    (``regression``, ``binary``, ``multiclass`` or ``count``); optional ``noise_sd`` gives
    the known noise level of a generated target, ``error_measure`` the paper's headline
    test error (``rmse``, ``nmse``).
    """

    name: str
    splits: dict[str, Split]
    metadata: dict = field(default_factory=dict)

    def split(self, name: str) -> Split:
        try:
            return self.splits[name]
        except KeyError:
            valid = ", ".join(self.splits)
            raise DatasetError(
                f"dataset {self.name!r} has no split {name!r}; valid splits: {valid}"
            ) from None

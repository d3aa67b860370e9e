"""Fit one sweep cell: load its split, build its settings and random stream, run the method,
and turn the result into the cell's dataset. Numerical failure inside the method becomes a
``diverged`` result rather than a crash, so that one bad cell does not stop a sweep.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import xarray as xr

from . import datasets
from .datasets.base import Split
from .methods import get_method
from .methods.base import FitResult
from .results import cell_dataset, write_netcdf_atomic
from .sweep import Cell

NUMERICAL_ERRORS = (np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)


def load_split(cell: Cell, data_path: str | Path | None = None) -> Split:
    """The cell's split, from a prepared NetCDF file if given, else from the registry."""
    dataset = datasets.load_netcdf(data_path) if data_path else datasets.load(cell.dataset)
    if dataset.name != cell.dataset:
        raise datasets.DatasetError(
            f"data file {str(data_path)!r} holds dataset {dataset.name!r}, not {cell.dataset!r}"
        )
    return dataset.split(cell.split)


def fit_cell(cell: Cell, data_path=None, log=print) -> xr.Dataset:
    method = get_method(cell.method_name)
    settings = method.settings(cell.settings)
    split = load_split(cell, data_path)
    rng = cell.rng()
    log(f"fitting {cell.path_id} with {method.name}: {settings}")
    start = time.perf_counter()
    try:
        with np.errstate(over="ignore", under="ignore"):
            result = method.fit(split, settings, rng, log=log)
    except NUMERICAL_ERRORS as err:
        shape = split.y_test.shape
        result = FitResult(np.full(shape, np.nan), np.full(shape, np.nan))
        result.flag("diverged", f"{type(err).__name__}: {err}")
    result.runtime_s = time.perf_counter() - start
    log(f"done in {result.runtime_s:.2f} s, status {result.status} {result.status_message}")
    return cell_dataset(result, split, cell, dataclasses.asdict(settings))


def fit_cell_to_file(cell: Cell, output, data_path=None, log=print) -> Path:
    return write_netcdf_atomic(fit_cell(cell, data_path, log), output)

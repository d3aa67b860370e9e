"""Fit one sweep cell: load its split, build its settings and random stream, run the method,
and turn the result into the cell's dataset. Numerical failure inside the method becomes a
``diverged`` result rather than a crash, so that one bad cell does not stop a sweep.
"""

from __future__ import annotations

import dataclasses
import errno
import resource
import shutil
import time
from pathlib import Path

import numpy as np
import xarray as xr

from . import datasets
from .datasets.base import Split
from .method_base import FitResult
from .methods import get_method
from .results import cell_dataset, write_netcdf_atomic
from .sweep import Cell

NUMERICAL_ERRORS = (np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError)
_WRITE_HINTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EFBIG: "the file size limit was reached",
    errno.EACCES: "the directory is not writable",
    errno.EPERM: "the directory is not writable",
    errno.EROFS: "the file system is read-only",
}


class WriteError(RuntimeError):
    """A result file could not be written (full disk, unwritable directory); no partial file
    is left under the output's name."""


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


def remove_stale_temporaries(output: str | Path) -> list[Path]:
    """Delete temporary files an earlier, killed write of ``output`` left beside it
    (``.<name>.*.tmp.nc``). Only one job writes a given output at a time."""
    output = Path(output)
    stale = list(output.parent.glob(f".{output.name}.*.tmp.nc")) if output.parent.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def write_result(ds: xr.Dataset, output: str | Path) -> Path:
    """Write ``ds`` atomically to ``output``; any failure becomes a WriteError that names the
    file and, where the system says so, the reason (full disk, permissions)."""
    output = Path(output)
    remove_stale_temporaries(output)
    try:
        return write_netcdf_atomic(ds, output)
    except (OSError, RuntimeError) as err:
        raise WriteError(f"cannot write {output}{_write_hint(err, output)}: {err}") from err


def _write_hint(err: BaseException, output: Path) -> str:
    """Why a write failed, as far as the system tells: the errno, else (the HDF5 library
    reports every failed write as 'HDF error') the file size limit or the free space."""
    reason = _WRITE_HINTS.get(getattr(err, "errno", None))
    if reason is None:
        size_limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if size_limit != resource.RLIM_INFINITY:
            reason = f"the file size limit (ulimit -f) is {size_limit} bytes"
    try:
        free = shutil.disk_usage(output.parent).free / 2**20
    except OSError:
        free = None
    if reason is None and free is not None and free < 100:
        reason = "the disk is full"
    space = f"; {free:.0f} MB free there" if free is not None else ""
    return f" ({reason}{space})" if reason else f" ({space[2:]})" if space else ""


def fit_cell_to_file(cell: Cell, output, data_path=None, log=print) -> Path:
    return write_result(fit_cell(cell, data_path, log), output)

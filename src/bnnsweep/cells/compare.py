"""Bitwise comparison of the data variables of two result files (cell or merged).

Reproducibility means byte-identical numbers for the same config and seeds, whatever ran
them (``--cores 1`` or ``2``, local or SLURM). Attributes are not compared, and neither are
the variables that record when, how long and by which revision something ran.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

# provenance, not results: the fit's duration, and (in merged files) each cell file's
# creation time and the code revision that wrote it
PROVENANCE = ("runtime_s", "created", "git_revision")
# durations a method records among its diagnostics (e.g. chaining's diag_start_seconds,
# diag_start_cpu_seconds) are provenance too
DURATION_SUFFIX = "_seconds"


def _same(a: xr.DataArray, b: xr.DataArray) -> bool:
    if a.dims != b.dims or a.shape != b.shape:
        return False
    x, y = np.asarray(a.values), np.asarray(b.values)
    if x.dtype.kind in "fc" and y.dtype == x.dtype:
        return x.tobytes() == y.tobytes()  # bitwise: NaNs equal, -0.0 differs from 0.0
    return x.dtype.kind == y.dtype.kind and bool(np.all(x == y))


def differing_variables(a: str | Path, b: str | Path, ignore=PROVENANCE) -> list[str]:
    """Names of data variables and coordinates that are missing from one file or differ
    bitwise between the two (ignoring ``ignore`` and durations, names ending in
    ``_seconds``); empty when the files agree."""
    with xr.open_dataset(a, engine="netcdf4") as da, xr.open_dataset(b, engine="netcdf4") as db:
        names = {
            name
            for name in set(da.variables) | set(db.variables)
            if name not in ignore and not str(name).endswith(DURATION_SUFFIX)
        }
        return sorted(
            name
            for name in names
            if name not in da.variables
            or name not in db.variables
            or not _same(da[name].load(), db[name].load())
        )

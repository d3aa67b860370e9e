"""A cell's NetCDF content and its atomic write, through netCDF4 directly, without xarray.

A fit job writes one small file per cell. Through xarray each write cost about 70 ms, and
importing xarray (with pandas) about 0.7 s of every job's start-up, for files that hold a few
dozen plain arrays. ``CellContent`` holds them as numpy arrays; ``write_cell_atomic`` encodes
them as ``xr.Dataset.to_netcdf`` (engine netcdf4) encodes such a Dataset, with the encoding
``results.write_netcdf_atomic`` asks for:

- floating-point variables get ``_FillValue`` NaN; integers none; booleans are int8 with
  the attribute ``dtype: bool``; strings are variable-length strings;
- numeric data variables with dimensions are zlib-compressed (level 4, shuffle);
- each data variable's ``coordinates`` attribute lists, sorted, the non-dimension
  coordinates whose dimensions are among its own;
- a variable named as its only dimension is a dimension coordinate, wherever it is given;
- the global attribute ``content_sha256`` records the content's checksum (``cells.checksum``),
  verified when the file is merged or checked;
- the file's seal (``file_seal``) carries the cell's key (``checksum.cell_key``).

``tests/test_cell_files.py`` checks the files against xarray's, variable by variable, for
cells of every method, and ``CellContent.to_dataset`` gives the same Dataset xarray reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import netCDF4
import numpy as np

from .atomic_file import write_atomic
from .checksum import CHECKSUM_ATTR, cell_key, content_checksum

Variable = tuple[tuple[str, ...], np.ndarray, dict]
"""(dimensions, values, attributes) of one variable."""


@dataclass
class CellContent:
    """Data variables, coordinates (dimension coordinates named by their dimension, and
    scalar ones) and global attributes of one cell file, in write order."""

    data_vars: dict[str, Variable] = field(default_factory=dict)
    coords: dict[str, Variable] = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def checksum(self) -> str:
        """The SHA-256 of the content (``cells.checksum``), recorded in the file."""
        return content_checksum({**self.data_vars, **self.coords}, self.attrs)

    def to_dataset(self):
        """The content as an ``xr.Dataset`` (what ``xr.open_dataset`` reads back)."""
        import xarray as xr

        def variable(dims, values, attrs):
            return xr.Variable(dims, values, dict(attrs))

        data = {name: variable(*v) for name, v in self.data_vars.items()}
        coords = {name: variable(*v) for name, v in self.coords.items()}
        attrs = {**self.attrs, CHECKSUM_ATTR: self.checksum()}
        return xr.Dataset(data, coords=coords, attrs=attrs)


def variable(values, dims=(), attrs=None) -> Variable:
    """A variable of ``values`` (made a numpy array) over ``dims``."""
    values = np.asarray(values)
    if values.ndim != len(dims):
        raise ValueError(f"values of shape {values.shape} do not fit dimensions {dims}")
    return tuple(dims), values, dict(attrs or {})


def _is_string(values: np.ndarray) -> bool:
    if values.dtype.kind == "U":
        return True
    return values.dtype.kind == "O" and all(isinstance(v, str) for v in values.flat)


def _create(nc: netCDF4.Dataset, name: str, var: Variable, compress: bool, coordinates: str):
    """Define variable ``name`` with its attributes; returns it and the values to store in
    it, written once every variable is defined (``write_cell``)."""
    dims, values, attrs = var
    if _is_string(values):
        out = nc.createVariable(name, str, dims)
        stored = np.asarray(values, dtype=object)
        if stored.ndim == 0:
            stored = stored.item()
    else:
        kind = values.dtype.kind
        if kind not in "fiub":
            raise TypeError(f"variable {name!r}: cannot store values of type {values.dtype}")
        stored = values.astype(np.int8) if kind == "b" else values
        compress = compress and kind in "fiu" and values.ndim > 0
        out = nc.createVariable(
            name,
            stored.dtype,
            dims,
            zlib=compress,
            complevel=4 if compress else 0,
            shuffle=compress,
            fill_value=np.nan if kind == "f" else None,
        )
    for key, value in attrs.items():
        out.setncattr(key, value)
    if coordinates:
        out.setncattr("coordinates", coordinates)
    if values.dtype.kind == "b":
        out.setncattr("dtype", "bool")
    return out, stored


def write_cell(content: CellContent, path: str | os.PathLike) -> None:
    """Write ``content`` to a new NetCDF-4 file at ``path``. Every variable and attribute is
    defined before any value is written: a write ends the file's define mode, and each
    later definition would start it again and rewrite the metadata so far (about 8 ms of a
    44-variable cell's 13 ms)."""
    shapes: dict[str, int] = {}
    for name, (dims, values, _) in (*content.data_vars.items(), *content.coords.items()):
        for dim, n in zip(dims, values.shape, strict=True):
            if shapes.setdefault(dim, n) != n:
                raise ValueError(f"variable {name!r}: dimension {dim!r} has size {shapes[dim]}")
    non_dim = {name: set(v[0]) for name, v in content.coords.items() if v[0] != (name,)}
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        for dim, n in shapes.items():
            nc.createDimension(dim, n)
        defined = []
        for name, var in content.data_vars.items():
            if var[0] == (name,):  # named as its dimension: a dimension coordinate
                defined.append(_create(nc, name, var, False, ""))
                continue
            listed = sorted(c for c, dims in non_dim.items() if dims <= set(var[0]))
            defined.append(_create(nc, name, var, True, " ".join(listed)))
        for name, var in content.coords.items():
            defined.append(_create(nc, name, var, False, ""))
        for key, value in content.attrs.items():
            nc.setncattr(key, value)
        nc.setncattr(CHECKSUM_ATTR, content.checksum())
        for out, stored in defined:
            if isinstance(stored, np.ndarray) and stored.dtype == object:
                out[:] = stored
            else:
                out[...] = stored


def write_cell_atomic(content: CellContent, path: str | os.PathLike) -> Path:
    """``write_cell`` through a temporary file renamed over ``path`` (``write_atomic``),
    sealed with the cell's key (``checksum.cell_key``) when its attributes say which
    cell it is."""
    key = cell_key(content.attrs) if "cell_json" in content.attrs else None
    return write_atomic(path, lambda tmp: write_cell(content, tmp), sealed=True, key=key)
